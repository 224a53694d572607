package harness

import (
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// Workspace is a tool's temporary work directory (generated configuration, service logs)
// and the service under test in it. From NewWorkspace on, SIGINT and SIGTERM kill that
// service by its PID, remove the directory unless it is kept, and end the tool with status
// 130.
type Workspace struct {
	Dir     string
	keep    bool
	service atomic.Pointer[Service]
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
		if s := w.service.Load(); s != nil && s.Alive() {
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
		}
		w.remove()
		os.Exit(130)
	}()
	return w, nil
}

// StartService starts the service as StartService does, its output in the file logName of
// the directory, and makes it the one an interrupt or Close stops.
func (w *Workspace) StartService(bin, configPath, logName string, workers int) (*Service, error) {
	s, err := StartService(bin, configPath, filepath.Join(w.Dir, logName), workers)
	if err == nil {
		w.service.Store(s)
	}
	return s, err
}

// StartServiceWith starts the service as StartServiceWith does, its output in the file
// logName of the directory (o.LogPath is ignored), and makes it the one an interrupt or
// Close stops.
func (w *Workspace) StartServiceWith(o ServiceOptions, logName string) (*Service, error) {
	o.LogPath = filepath.Join(w.Dir, logName)
	s, err := StartServiceWith(o)
	if err == nil {
		w.service.Store(s)
	}
	return s, err
}

// Close stops the service, if it still runs, and removes the directory unless it is kept.
func (w *Workspace) Close() {
	if s := w.service.Load(); s != nil {
		s.Stop()
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
