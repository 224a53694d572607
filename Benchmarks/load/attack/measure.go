package main

// What is measured beside wrk's throughput (harness.RunWrk): every 100 ms the service's RSS
// and the CPU time of each of its threads, the tool's own CPU time and the machine's.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

// sample is one reading of /proc.
type sample struct {
	at       time.Time
	rssKiB   int           // -1 once the service is gone
	threads  map[int]int64 // thread id -> CPU ns so far
	tool     time.Duration // this tool's CPU time so far (all its threads)
	machine  int           // busy ticks of the whole machine so far
	upstream int           // CPU ticks of the upstream's processes so far
}

// serviceNs is the service's CPU time in this sample (the sum over its threads).
func (s sample) serviceNs() int64 {
	var total int64
	for _, ns := range s.threads {
		total += ns
	}
	return total
}

func toolCPU() time.Duration {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano()+usage.Stime.Nano()) + externalCPU()
}

// The attackers this tool runs as processes (slowhttptest): their CPU time counts as the
// tool's, read from /proc while they run and from their exit status once they ended.
var external struct {
	mu    sync.Mutex
	live  map[int]bool
	ended time.Duration
}

// startExternal starts an attacker process whose CPU time counts as this tool's.
func startExternal(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	external.mu.Lock()
	if external.live == nil {
		external.live = map[int]bool{}
	}
	external.live[cmd.Process.Pid] = true
	external.mu.Unlock()
	return nil
}

// waitExternal waits for an attacker started by startExternal and keeps its CPU time.
func waitExternal(cmd *exec.Cmd) {
	cmd.Wait()
	external.mu.Lock()
	delete(external.live, cmd.Process.Pid)
	if cmd.ProcessState != nil {
		external.ended += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	external.mu.Unlock()
}

func externalCPU() time.Duration {
	external.mu.Lock()
	defer external.mu.Unlock()
	var pids []int
	for pid := range external.live {
		pids = append(pids, pid)
	}
	return external.ended + time.Duration(processTicks(pids))*10*time.Millisecond
}

// sampler reads /proc every `every` until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(s *harness.Service, upstreamPIDs []int, every time.Duration) *sampler {
	sm := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	read := func() {
		one := sample{at: time.Now(), rssKiB: s.RSSKiB(), threads: s.ThreadCPU(), tool: toolCPU(),
			machine: harness.MachineBusyTicks(), upstream: processTicks(upstreamPIDs)}
		sm.mu.Lock()
		sm.samples = append(sm.samples, one)
		sm.mu.Unlock()
	}
	read()
	go func() {
		defer close(sm.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-sm.stop:
				read()
				return
			case <-ticker.C:
				read()
			}
		}
	}()
	return sm
}

func (sm *sampler) Stop() []sample {
	close(sm.stop)
	<-sm.done
	return sm.snapshot()
}

func (sm *sampler) snapshot() []sample {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return append([]sample(nil), sm.samples...)
}

// between is the samples taken in [from, to].
func between(samples []sample, from, to time.Time) []sample {
	var out []sample
	for _, s := range samples {
		if !s.at.Before(from) && !s.at.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// peakRSS is the highest RSS among the samples (KiB; -1 if none could be read).
func peakRSS(samples []sample) int {
	peak := -1
	for _, s := range samples {
		if s.rssKiB > peak {
			peak = s.rssKiB
		}
	}
	return peak
}

// percentOfCore is busy/elapsed in percent of one core.
func percentOfCore(busy time.Duration, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return 100 * float64(busy) / float64(elapsed)
}

// processTicks is the CPU time (user + system, 1/100 s) the processes have used so far.
func processTicks(pids []int) int {
	total := 0
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		text := string(data)
		fields := strings.Fields(text[strings.LastIndexByte(text, ')')+2:])
		user, _ := strconv.Atoi(fields[11])
		system, _ := strconv.Atoi(fields[12])
		total += user + system
	}
	return total
}

// processTree is pid and its children (nginx: the master and its workers).
func processTree(pid int) []int {
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		child, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		text := string(data)
		fields := strings.Fields(text[strings.LastIndexByte(text, ')')+2:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	return pids
}

// usage is what one phase cost, in percent of one core.
type usage struct {
	service, tool, machine, upstream float64
	threadMax                        map[int]float64 // each thread's busiest 200 ms window
}

func phaseUsage(samples []sample) usage {
	u := usage{threadMax: map[int]float64{}}
	if len(samples) < 2 {
		return u
	}
	first, last := samples[0], samples[len(samples)-1]
	elapsed := last.at.Sub(first.at)
	// The service's own share up to its last sample with threads (none once it has died).
	alive := first
	for _, s := range samples {
		if len(s.threads) > 0 {
			alive = s
		}
	}
	u.service = percentOfCore(time.Duration(alive.serviceNs()-first.serviceNs()), alive.at.Sub(first.at))
	u.tool = percentOfCore(last.tool-first.tool, elapsed)
	u.machine = percentOfCore(time.Duration(last.machine-first.machine)*10*time.Millisecond, elapsed)
	u.upstream = percentOfCore(time.Duration(last.upstream-first.upstream)*10*time.Millisecond, elapsed)
	for i := 0; i+2 < len(samples); i++ {
		for tid, percent := range windowPercent(samples[i], samples[i+2]) {
			if percent > u.threadMax[tid] {
				u.threadMax[tid] = percent
			}
		}
	}
	return u
}

// windowPercent is each thread's CPU between two samples, in percent of one core (threads
// present in both).
func windowPercent(a, b sample) map[int]float64 {
	out := map[int]float64{}
	elapsed := b.at.Sub(a.at)
	for tid, ns := range b.threads {
		if before, ok := a.threads[tid]; ok {
			out[tid] = percentOfCore(time.Duration(ns-before), elapsed)
		}
	}
	return out
}

// recovery looks, in the samples after `stopped`, for the first window of `window` (two
// samples apart at the default 100 ms sampling) in which every thread of the service used
// less than idlePercent of one core, followed by idle windows for at least `hold`. It returns
// the end of that first window minus `stopped`, and false if there is none (yet).
func recovery(samples []sample, stopped time.Time, window time.Duration, idlePercent float64, hold time.Duration) (time.Duration, bool) {
	after := between(samples, stopped, samples[len(samples)-1].at)
	// windows: pairs (i, j) with j the first sample at least `window` after i
	type win struct {
		start, end time.Time
		idle       bool
	}
	var wins []win
	for i := 0; i < len(after); {
		j := i + 1
		for j < len(after) && after[j].at.Sub(after[i].at) < window-window/10 {
			j++
		}
		if j >= len(after) {
			break
		}
		idle := after[j].rssKiB >= 0
		for _, percent := range windowPercent(after[i], after[j]) {
			if percent >= idlePercent {
				idle = false
			}
		}
		wins = append(wins, win{after[i].at, after[j].at, idle})
		i = j
	}
	for k, w := range wins {
		if !w.idle {
			continue
		}
		quiet := true
		held := false
		for _, next := range wins[k:] {
			if !next.idle {
				quiet = false
				break
			}
			if next.end.Sub(w.start) >= hold {
				held = true
				break
			}
		}
		if quiet && held {
			return w.end.Sub(stopped), true
		}
		if !quiet {
			continue
		}
		return 0, false // idle so far, but not for long enough yet
	}
	return 0, false
}
