package harness

// The service under valgrind's callgrind, for the counts that noise cannot move: its
// instructions and its calls to the allocator over a stretch of work, read from callgrind's
// dump by Benchmarks/callgrind_counts.py (the reader Benchmarks/budgets.py trusts).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Callgrind is a service running under callgrind.
type Callgrind struct {
	*Service
	profile, countsScript string
}

// StartCallgrind runs the service as o says (o.Under is set here), under valgrind's callgrind
// writing to `profile` (its dumps are profile.N; every earlier profile* is removed first), with
// its output in the file logName of the directory; it waits up to a minute for /healthz.
// Valgrind 3.19 cannot read Swift 6's DWARF 5: the service runs from a copy of o.Bin without
// debug information (its symbols kept). countsScript is Benchmarks/callgrind_counts.py.
func (w *Workspace) StartCallgrind(o ServiceOptions, logName, profile, countsScript string) (*Callgrind, error) {
	stripped := filepath.Join(w.Dir, "tributary-stripped")
	if out, err := exec.Command("objcopy", "--strip-debug", o.Bin, stripped).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("objcopy --strip-debug: %v: %s", err, out)
	}
	old, _ := filepath.Glob(profile + "*")
	for _, path := range old {
		os.Remove(path)
	}
	o.Bin = stripped
	o.Under = []string{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + profile}
	if o.ReadyWithin == 0 {
		o.ReadyWithin = time.Minute
	}
	s, err := w.StartServiceWith(o, logName)
	if err != nil {
		return nil, err
	}
	return &Callgrind{Service: s, profile: profile, countsScript: countsScript}, nil
}

// Zero sets callgrind's counters to zero (callgrind_control -z).
func (c *Callgrind) Zero() error { return c.control("-z") }

func (c *Callgrind) control(option string) error {
	if out, err := exec.Command("callgrind_control", option, fmt.Sprint(c.PID)).CombinedOutput(); err != nil {
		return fmt.Errorf("callgrind_control %s: %v: %s", option, err, out)
	}
	return nil
}

// Dump has callgrind write what it counted since the last Zero (callgrind_control -d) and
// returns the dump's path, its instructions and its allocations (callgrind_counts.py).
func (c *Callgrind) Dump() (path string, instructions, allocations int64, err error) {
	if err := c.control("-d"); err != nil {
		return "", 0, 0, err
	}
	time.Sleep(time.Second)
	var dumps []string
	all, _ := filepath.Glob(c.profile + "*")
	for _, path := range all {
		if path != c.profile { // the profile of the whole run, written at exit
			dumps = append(dumps, path)
		}
	}
	sort.Slice(dumps, func(i, j int) bool { return modified(dumps[i]).After(modified(dumps[j])) })
	if len(dumps) == 0 {
		return "", 0, 0, fmt.Errorf("callgrind wrote no dump: %s", c.LogTail())
	}
	out, err := exec.Command("python3", c.countsScript, dumps[0]).Output()
	if err != nil {
		return "", 0, 0, fmt.Errorf("%s %s: %v", c.countsScript, dumps[0], err)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%d %d", &instructions, &allocations); err != nil {
		return "", 0, 0, fmt.Errorf("%s printed %q", c.countsScript, out)
	}
	return dumps[0], instructions, allocations, nil
}

func modified(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}
