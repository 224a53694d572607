package harness

import (
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// Workspace is a tool's temporary work directory (generated configuration, service logs)
// and the processes under test in it: the services it started (several for the fleet's
// replicas), helpers (the demo upstream, a collector) and a redis-server. From NewWorkspace
// on, SIGINT and SIGTERM kill each of them by its PID, remove the directory unless it is
// kept, and end the tool with status 130.
type Workspace struct {
	Dir      string
	keep     bool
	mu       sync.Mutex
	services []*Service
	redis    *Redis
	stoppers []func() // more processes to stop (OnClose)
}

// NewWorkspace creates the directory (tributary-TOOL.* in the temporary directory) and
// installs the interrupt handling.
func NewWorkspace(tool string, keep bool) (*Workspace, error) {
	dir, err := os.MkdirTemp("", "tributary-"+tool+".")
	if err != nil {
		return nil, err
	}
	w := &Workspace{Dir: dir, keep: keep}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		fmt.Fprintln(os.Stderr, "interrupted: stopping")
		w.mu.Lock()
		for _, s := range w.services {
			if s.Alive() {
				_ = syscall.Kill(s.PID, syscall.SIGKILL)
			}
		}
		if w.redis != nil {
			w.redis.Kill()
		}
		stoppers := w.stoppers
		w.mu.Unlock()
		for _, stop := range stoppers {
			stop()
		}
		w.remove()
		os.Exit(130)
	}()
	return w, nil
}

// StartService starts the service as StartService does, its output in the file logName of
// the directory, and adds it to those an interrupt or Close stops.
func (w *Workspace) StartService(bin, configPath, logName string, workers int) (*Service, error) {
	return w.StartServiceWith(ServiceOptions{Bin: bin, ConfigPath: configPath, Workers: workers}, logName)
}

// StartServiceWith starts the service as StartServiceWith does, its output in the file
// logName of the directory (o.LogPath is ignored), and adds it to those an interrupt or
// Close stops.
func (w *Workspace) StartServiceWith(o ServiceOptions, logName string) (*Service, error) {
	o.LogPath = filepath.Join(w.Dir, logName)
	return w.track(StartServiceWith(o))
}

// StartDemoUpstream starts `bin demo-upstream` as StartDemoUpstream does, its output in the
// file logName of the directory, and adds it to those an interrupt or Close stops.
func (w *Workspace) StartDemoUpstream(bin, logName string) (*Service, error) {
	return w.track(StartDemoUpstream(bin, filepath.Join(w.Dir, logName)))
}

// StartProcess starts a helper as StartProcess does, its output in the file logName of the
// directory, and adds it to those an interrupt or Close stops.
func (w *Workspace) StartProcess(logName string, port int, name string, args ...string) (*Service, error) {
	return w.track(StartProcess(filepath.Join(w.Dir, logName), port, name, args...))
}

// track adds a process just started (unless it failed to start) to those an interrupt or
// Close stops.
func (w *Workspace) track(s *Service, err error) (*Service, error) {
	if err == nil {
		w.mu.Lock()
		w.services = append(w.services, s)
		w.mu.Unlock()
	}
	return s, err
}

// StartRedis starts a redis-server as StartRedis does, its output in redis.log of the
// directory, and makes it the one an interrupt or Close stops.
func (w *Workspace) StartRedis() (*Redis, error) {
	r, err := StartRedis(w.Dir)
	if err == nil {
		w.mu.Lock()
		w.redis = r
		w.mu.Unlock()
	}
	return r, err
}

// OnClose adds a process of the tool's own (nginx) to those an interrupt or Close stops:
// stop is called then.
func (w *Workspace) OnClose(stop func()) {
	w.mu.Lock()
	w.stoppers = append(w.stoppers, stop)
	w.mu.Unlock()
}

// Close stops what OnClose added, every service that still runs and the redis-server, and
// removes the directory unless it is kept.
func (w *Workspace) Close() {
	w.mu.Lock()
	services, redis, stoppers := w.services, w.redis, w.stoppers
	w.services, w.redis, w.stoppers = nil, nil, nil
	w.mu.Unlock()
	for _, stop := range stoppers {
		stop()
	}
	for _, s := range services {
		s.Stop()
	}
	if redis != nil {
		redis.Stop()
	}
	w.remove()
}

// Check ends the tool if err is not nil: Close, then log.Fatal.
func (w *Workspace) Check(err error) {
	if err != nil {
		w.Close()
		log.Fatal(err)
	}
}

func (w *Workspace) remove() {
	if !w.keep {
		os.RemoveAll(w.Dir)
	}
}
