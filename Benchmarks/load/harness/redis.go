package harness

import (
	"bufio"
	"fmt"
	"io"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FleetSecret is the fleet's shared secret (TRIBUTARY_CLUSTER_SECRET) of the replicas the
// tools start: every replica with --redis needs one.
const FleetSecret = "benchmarks-fleet-secret-5b8e1f0c7a9d2e46"

// Redis is a redis-server (Debian's redis-server package) started by a tool for the fleet:
// on a free loopback port, nothing persisted, its output in a log file. Stopped or killed by
// its PID.
type Redis struct {
	Port    int
	URL     string // redis://127.0.0.1:PORT
	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartRedis starts redis-server on a free loopback port with its files and log (redis.log)
// in dir, and waits (≤ 10 s) until it says it accepts connections. Like the service, it gets
// SIGKILL if the tool dies (see the package comment: call it from the main goroutine).
func StartRedis(dir string) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Redis{Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d", port), dir: dir, logPath: filepath.Join(dir, "redis.log")}
	return r, r.launch()
}

func (r *Redis) launch() error {
	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--daemonize", "no")
	output, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("cannot run redis-server (install the redis-server package): %w", err)
	}
	ready := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(io.TeeReader(output, logFile))
		signalled := false
		for lines.Scan() {
			if !signalled && strings.Contains(lines.Text(), "Ready to accept connections") {
				close(ready)
				signalled = true
			}
		}
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	r.cmd, r.exited = cmd, exited
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("redis-server exited at start; see %s", r.logPath)
	case <-time.After(10 * time.Second):
		r.Kill()
		return fmt.Errorf("redis-server did not become ready within 10 s; see %s", r.logPath)
	}
}

// PID is the running server's process id (0 once it exited).
func (r *Redis) PID() int {
	select {
	case <-r.exited:
		return 0
	default:
		return r.cmd.Process.Pid
	}
}

// Restart starts the server again on the same port, empty, once it has exited (after Kill
// or Stop), and waits until it accepts connections.
func (r *Redis) Restart() error {
	if r.PID() != 0 {
		return fmt.Errorf("redis-server pid %d still runs", r.PID())
	}
	return r.launch()
}

// Signal sends sig to the running server (SIGSTOP freezes it, SIGCONT thaws it).
func (r *Redis) Signal(sig syscall.Signal) {
	if pid := r.PID(); pid != 0 {
		_ = syscall.Kill(pid, sig)
	}
}

// Kill sends SIGKILL and waits for the exit.
func (r *Redis) Kill() {
	if pid := r.PID(); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-r.exited
	}
}

// Stop sends SIGTERM, then SIGKILL after 5 s, and waits for the exit.
func (r *Redis) Stop() {
	pid := r.PID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		r.Kill()
	}
}
