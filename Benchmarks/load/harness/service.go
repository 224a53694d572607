// Package harness is what the load tools of Benchmarks/load have in common: starting and
// watching the Tributary process under test (a free loopback port, readiness through
// /healthz, RSS, open files, CPU time and sockets from /proc, a stop by PID) and the helper
// processes beside it (the demo upstream, a collector), waiting for a quiet machine, the
// tools' work directory, their generated configuration, their scripted upstream (fixture.go)
// and the helpers of the two raw-TCP ones (upstream.go), the SSE load client (sse.go), wrk
// and the flags of the tools around it (wrk.go, flags.go), nginx and redis-server, the static
// nginx fixture of ../shared/bench (static.go), a keep-alive client and an event-stream
// subscriber of the service (client.go), the service under callgrind (callgrind.go), and the
// small helpers of their reports.
//
// Importing the package locks the main goroutine to the main thread (see init): the service
// gets SIGTERM when the thread that started it ends, so StartService must be called from the
// main goroutine, which then lives on that thread as long as the tool does.
package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func init() {
	// The service's parent-death signal is tied to the thread that started it: keep the main
	// goroutine (which starts it) on the main thread for good.
	runtime.LockOSThread()
}

// Service is a running `tributary serve` process, or a helper process a tool started the same
// way (the demo upstream, a collector: StartDemoUpstream, StartProcess).
type Service struct {
	PID     int
	Addr    string // 127.0.0.1:PORT
	Port    int
	logPath string
	exited  chan struct{}
	exitErr error
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// StartService runs `bin serve` on a free loopback port with `workers` workers
// (TRIBUTARY_WORKERS), log level warning and its output in logPath, and waits (≤ 15 s) until
// /healthz answers 200. Call it from the main goroutine (see the package comment).
func StartService(bin, configPath, logPath string, workers int) (*Service, error) {
	return StartServiceWith(ServiceOptions{Bin: bin, ConfigPath: configPath, LogPath: logPath, Workers: workers})
}

// ServiceOptions is how StartServiceWith runs the service.
type ServiceOptions struct {
	Bin, ConfigPath, LogPath string
	Workers                  int           // TRIBUTARY_WORKERS; 0 leaves the configuration's
	Args                     []string      // more `serve` arguments, e.g. "--upstream", "tasks=URL"
	OpenFiles                int           // > 0: started under `prlimit --nofile=N:N` (soft and hard limit)
	Port                     int           // the loopback port to listen on; 0: a free one
	Env                      []string      // more environment, e.g. "TRIBUTARY_CLUSTER_SECRET=…"
	Under                    []string      // a command the service runs under, e.g. valgrind and its options
	ReadyWithin              time.Duration // how long /healthz may take to answer 200; 0: 15 s
}

// StartServiceWith runs `bin serve --config … --listen 127.0.0.1:PORT` (o.Port or a free
// port, then o.Args) with log level warning and its output in o.LogPath, and waits (≤ 15 s,
// or o.ReadyWithin) until /healthz answers 200. With o.OpenFiles, prlimit sets both open-file
// limits and then execs the service, so the PID is the service's and it cannot raise its soft
// limit above N; with o.Under, the service runs under that command (valgrind), whose PID is
// then the service's. Call it from the main goroutine (see the package comment).
func StartServiceWith(o ServiceOptions) (*Service, error) {
	port := o.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{o.Bin, "serve", "--config", o.ConfigPath, "--listen", addr}, o.Args...)
	if o.OpenFiles > 0 {
		args = append([]string{"prlimit", fmt.Sprintf("--nofile=%d:%d", o.OpenFiles, o.OpenFiles), "--"}, args...)
	}
	args = append(append([]string(nil), o.Under...), args...)
	env := append([]string{"TRIBUTARY_LOG_LEVEL=warning"}, o.Env...)
	if o.Workers > 0 {
		env = append(env, "TRIBUTARY_WORKERS="+strconv.Itoa(o.Workers))
	}
	within := o.ReadyWithin
	if within == 0 {
		within = 15 * time.Second
	}
	return startProcess(args, env, port, o.LogPath, "/healthz", within)
}

// StartDemoUpstream runs `bin demo-upstream` (the tasks, media and search APIs the shipped
// configuration names, 10 groups) on a free loopback port, its output in logPath, and waits
// (≤ 15 s) until GET /groups answers 200. Call it from the main goroutine.
func StartDemoUpstream(bin, logPath string) (*Service, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startProcess([]string{bin, "demo-upstream", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, nil, port, logPath, "/groups", 15*time.Second)
}

// StartProcess runs a helper of a tool's (name and args; a collector, say) that listens on
// 127.0.0.1:port, its output in logPath, and waits (≤ 15 s) until GET / on the port gets an
// answer, whatever its status. It is stopped by its PID like the service. Call it from the
// main goroutine.
func StartProcess(logPath string, port int, name string, args ...string) (*Service, error) {
	return startProcess(append([]string{name}, args...), nil, port, logPath, "/", 15*time.Second)
}

// startProcess runs args[0] with the rest of args, the environment plus env, its output in
// logPath, and waits (≤ within) until GET readyPath on 127.0.0.1:port answers: 200 for
// /healthz and /groups, anything for another path.
func startProcess(args, env []string, port int, logPath, readyPath string, within time.Duration) (*Service, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The main goroutine is locked to the main thread, which lives as long as this process:
	// if this tool dies, the process gets SIGTERM instead of running on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s := &Service{PID: cmd.Process.Pid, Addr: addr, Port: port, logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s exited at start (%v): %s", args[0], s.exitErr, s.LogTail())
		default:
		}
		answer := status(client, "http://"+addr+readyPath)
		if answer == 200 || (answer != 0 && readyPath == "/") {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("%s did not answer %s within %s: %s", args[0], readyPath, within, s.LogTail())
}

// Done is closed once the service has exited (and been waited for).
func (s *Service) Done() <-chan struct{} { return s.exited }

// ExitErr is how the service ended (nil: exit status 0); meaningful once Done is closed.
func (s *Service) ExitErr() error { return s.exitErr }

// Alive reports whether the service has not exited yet.
func (s *Service) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the service's PID, then SIGKILL after 12 s, and waits until it has
// exited. It does nothing once the service has exited.
func (s *Service) Stop() {
	if !s.Alive() {
		return
	}
	_ = syscall.Kill(s.PID, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(12 * time.Second):
		_ = syscall.Kill(s.PID, syscall.SIGKILL)
		<-s.exited
	}
}

// ExitCode is the service's exit status, 128 + the signal if a signal ended it, -1 while it
// runs, -2 if it could not be waited for.
func (s *Service) ExitCode() int {
	if s.Alive() {
		return -1
	}
	if s.exitErr == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(s.exitErr, &exit) {
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			return 128 + int(status.Signal())
		}
		return exit.ExitCode()
	}
	return -2
}

// LogTail is the last 2,000 bytes of the service's output.
func (s *Service) LogTail() string {
	data, _ := os.ReadFile(s.logPath)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return strings.TrimSpace(string(data))
}

// probe asks the service for /healthz and /metrics, a new connection each time.
var probe = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// status is the status code of GET url (0 if there is no answer).
func status(client *http.Client, url string) int {
	response, err := client.Get(url)
	if err != nil {
		return 0
	}
	response.Body.Close()
	return response.StatusCode
}

// Healthz is the status code of the service's GET /healthz (0 if there is no answer).
func (s *Service) Healthz() int {
	return status(probe, "http://"+s.Addr+"/healthz")
}

// Gauges reads the tributary_sse_subscribers and tributary_live_pipelines gauges of
// `resource` from the service's /metrics, as written there, or "?" for one it cannot read.
func (s *Service) Gauges(resource string) (subscribers, pipelines string) {
	subscribers, pipelines = "?", "?"
	response, err := probe.Get("http://" + s.Addr + "/metrics")
	if err != nil {
		return subscribers, pipelines
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	for _, line := range strings.Split(string(body), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 || !strings.Contains(fields[0], `resource="`+resource+`"`) {
			continue
		}
		switch {
		case strings.HasPrefix(fields[0], "tributary_sse_subscribers"):
			subscribers = fields[1]
		case strings.HasPrefix(fields[0], "tributary_live_pipelines"):
			pipelines = fields[1]
		}
	}
	return subscribers, pipelines
}

// Metric is the value of the series `series` (a name with its labels as /metrics writes
// them, e.g. `tributary_cluster_lease_held{resource="groups"}`) in the service's /metrics;
// false if the service did not answer or has no such series.
func (s *Service) Metric(series string) (float64, bool) {
	response, err := probe.Get("http://" + s.Addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, series+" ") {
			number, err := strconv.ParseFloat(strings.TrimSpace(line[len(series)+1:]), 64)
			return number, err == nil
		}
	}
	return 0, false
}

// MetricSum is the sum of every series of the metric `name` in the service's /metrics whose
// labels hold each of `labels` (e.g. `route="/groups"`; none: whatever its labels); 0 when it
// has none or did not answer.
func (s *Service) MetricSum(name string, labels ...string) float64 {
	response, err := probe.Get("http://" + s.Addr + "/metrics")
	if err != nil {
		return 0
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && (fields[0] == name || strings.HasPrefix(fields[0], name+"{")) && hasAll(fields[0], labels) {
			value, _ := strconv.ParseFloat(fields[1], 64)
			sum += value
		}
	}
	return sum
}

// hasAll reports whether text holds every one of parts.
func hasAll(text string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(text, part) {
			return false
		}
	}
	return true
}
