// Package harness is what the load tools of Benchmarks/load have in common: starting and
// watching the Tributary process under test (a free loopback port, readiness through
// /healthz, RSS, open files, CPU time and sockets from /proc, a stop by PID), waiting for a
// quiet machine, the tools' work directory, their generated configuration, their scripted
// upstream (fixture.go) and the helpers of the two raw-TCP ones (upstream.go), the SSE load
// client (sse.go), nginx and redis-server, and the small helpers of their reports.
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

// Service is a running `tributary serve` process.
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
	Workers                  int      // TRIBUTARY_WORKERS; 0 leaves the configuration's
	Args                     []string // more `serve` arguments, e.g. "--upstream", "tasks=URL"
	OpenFiles                int      // > 0: started under `prlimit --nofile=N:N` (soft and hard limit)
	Port                     int      // the loopback port to listen on; 0: a free one
	Env                      []string // more environment, e.g. "TRIBUTARY_CLUSTER_SECRET=…"
}

// StartServiceWith runs `bin serve --config … --listen 127.0.0.1:PORT` (o.Port or a free
// port, then o.Args) with log level warning and its output in o.LogPath, and waits (≤ 15 s) until
// /healthz answers 200. With o.OpenFiles, prlimit sets both open-file limits and then execs
// the service, so the PID is the service's and it cannot raise its soft limit above N. Call it
// from the main goroutine (see the package comment).
func StartServiceWith(o ServiceOptions) (*Service, error) {
	port := o.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile, err := os.Create(o.LogPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--config", o.ConfigPath, "--listen", addr}, o.Args...)
	name := o.Bin
	if o.OpenFiles > 0 {
		args = append([]string{fmt.Sprintf("--nofile=%d:%d", o.OpenFiles, o.OpenFiles), "--", o.Bin}, args...)
		name = "prlimit"
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), "TRIBUTARY_LOG_LEVEL=warning"), o.Env...)
	if o.Workers > 0 {
		cmd.Env = append(cmd.Env, "TRIBUTARY_WORKERS="+strconv.Itoa(o.Workers))
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The main goroutine is locked to the main thread, which lives as long as this process:
	// if this tool dies, the service gets SIGTERM instead of running on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s := &Service{PID: cmd.Process.Pid, Addr: addr, Port: port, logPath: o.LogPath, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("tributary exited at start (%v): %s", s.exitErr, s.LogTail())
		default:
		}
		if status(client, "http://"+addr+"/healthz") == 200 {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("tributary did not answer /healthz within 15 s: %s", s.LogTail())
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
