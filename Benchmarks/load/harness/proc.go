package harness

// What /proc tells about the service and the machine.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// RSSKiB is the service's VmRSS in KiB (-1 if unreadable).
func (s *Service) RSSKiB() int { return ProcessRSSKiB(s.PID) }

// ProcessRSSKiB is the VmRSS of process pid in KiB (-1 if unreadable): the service's, or a
// peer's worker (nginx) that a tool measures the same way.
func ProcessRSSKiB(pid int) int { return statusKiB(pid, "VmRSS:") }

// PeakRSSKiB is the service's VmHWM, the peak of its RSS so far, in KiB (-1 if unreadable).
func (s *Service) PeakRSSKiB() int { return statusKiB(s.PID, "VmHWM:") }

// statusKiB is the value of the field (e.g. "VmRSS:") of /proc/PID/status in KiB (-1 if
// unreadable).
func statusKiB(pid int, field string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(field)) {
			fields := strings.Fields(string(line[len(field):]))
			if len(fields) > 0 {
				value, _ := strconv.Atoi(fields[0])
				return value
			}
		}
	}
	return -1
}

// OpenFiles is how many file descriptors the service has open (-1 if unreadable).
func (s *Service) OpenFiles() int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.PID))
	if err != nil {
		return -1
	}
	return len(entries)
}

// CPUTicks is the service's user + system CPU time in clock ticks (1/100 s; -1 if unreadable).
func (s *Service) CPUTicks() int { return ProcessCPUTicks(s.PID) }

// ProcessCPUTicks is the user + system CPU time of process pid (all its threads) in clock
// ticks (1/100 s; -1 if unreadable).
func ProcessCPUTicks(pid int) int {
	user, system := ProcessCPU(pid)
	if user < 0 {
		return -1
	}
	return user + system
}

// ProcessCPU is the user and the system CPU time of process pid (all its threads) in clock
// ticks (1/100 s), utime and stime of /proc/PID/stat; -1, -1 if unreadable.
func ProcessCPU(pid int) (user, system int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1, -1
	}
	text := string(data)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+2:])
	user, _ = strconv.Atoi(fields[11])
	system, _ = strconv.Atoi(fields[12])
	return user, system
}

// ReadChars is rchar of the service's /proc/PID/io: the bytes it read with read() and its
// kin (not recv() on sockets); -1 if unreadable.
func (s *Service) ReadChars() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", s.PID))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "rchar:") {
			value, _ := strconv.ParseInt(strings.TrimSpace(line[6:]), 10, 64)
			return value
		}
	}
	return -1
}

// Sockets counts the TCP sockets the service holds: connections accepted on its port (its
// clients) and connections to upstreamPort (its upstream pool), from /proc/net/tcp.
func (s *Service) Sockets(upstreamPort int) (clients, upstreams int) {
	inodes := map[string]bool{}
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.PID))
	for _, entry := range entries {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", s.PID, entry.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[target[8:len(target)-1]] = true
		}
	}
	data, _ := os.ReadFile("/proc/net/tcp")
	for _, line := range strings.Split(string(data), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) < 10 || !inodes[fields[9]] {
			continue
		}
		local := hexPort(fields[1])
		remote := hexPort(fields[2])
		switch {
		case local == s.Port && remote != 0:
			clients++
		case remote == upstreamPort:
			upstreams++
		}
	}
	return clients, upstreams
}

// hexPort is the port of a /proc/net/tcp address (ADDR:PORT, both in hexadecimal).
func hexPort(address string) int {
	colon := strings.LastIndexByte(address, ':')
	port, _ := strconv.ParseInt(address[colon+1:], 16, 32)
	return int(port)
}

// InvoluntarySwitches is how often the service's threads were preempted (CPU contention).
func (s *Service) InvoluntarySwitches() int { return ProcessInvoluntarySwitches(s.PID) }

// ProcessInvoluntarySwitches is how often the threads of process pid were preempted.
func ProcessInvoluntarySwitches(pid int) int {
	total := 0
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "nonvoluntary_ctxt_switches:") {
				value, _ := strconv.Atoi(strings.TrimSpace(line[len("nonvoluntary_ctxt_switches:"):]))
				total += value
			}
		}
	}
	return total
}

// MachineBusyTicks is the CPU time (1/100 s) the whole machine spent busy so far: user,
// nice, system, irq, softirq and steal of every core, from /proc/stat.
func MachineBusyTicks() int {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	total := 0
	for _, index := range []int{1, 2, 3, 6, 7, 8} {
		if index < len(fields) {
			value, _ := strconv.Atoi(fields[index])
			total += value
		}
	}
	return total
}

// WaitQuiet waits (at most `limit`) until the machine is at most `maxPercent` busy over 2 s
// (100% = every core), as ../shared/bench (next to this repository) does before each phase;
// it says what it found.
func WaitQuiet(maxPercent int, limit time.Duration) {
	started := time.Now()
	cores := runtime.NumCPU()
	for {
		before := MachineBusyTicks()
		time.Sleep(2 * time.Second)
		busy := (MachineBusyTicks() - before) * 100 / (2 * 100 * cores)
		waited := time.Since(started).Round(time.Second)
		if busy <= maxPercent {
			fmt.Printf("machine %d%% busy before measuring (waited %s)\n", busy, waited)
			return
		}
		if waited >= limit {
			fmt.Printf("WARNING: machine still %d%% busy with other work after %s; measuring anyway\n", busy, waited)
			return
		}
		if int(waited.Seconds())%60 < 5 {
			fmt.Fprintf(os.Stderr, "machine %d%% busy with other work; waiting (at most %s)\n", busy, limit)
		}
		time.Sleep(3 * time.Second)
	}
}

// ThreadCPU is the CPU time each of the service's threads has used so far, by thread id, in
// nanoseconds: the first field of /proc/PID/task/TID/schedstat (the scheduler's own clock, so
// finer than the 10 ms ticks of /proc/PID/stat). Empty once the service is gone.
func (s *Service) ThreadCPU() map[int]int64 {
	threads := map[int]int64{}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.PID))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", s.PID, task.Name()))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		tid, err1 := strconv.Atoi(task.Name())
		if len(fields) == 0 || err1 != nil {
			continue
		}
		if ns, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			threads[tid] = ns
		}
	}
	return threads
}

// SchedNanoseconds is the CPU time of all the service's threads so far, in nanoseconds (the
// sum of ThreadCPU).
func (s *Service) SchedNanoseconds() int64 {
	var total int64
	for _, ns := range s.ThreadCPU() {
		total += ns
	}
	return total
}
