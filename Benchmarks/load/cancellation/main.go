// cancellation: how fast a client's disconnect reaches the upstream, and whether connect /
// disconnect cycles leave memory behind.
//
// Latency (-trials, one at a time): a client sends GET /groups; the upstream answers the
// list and hangs every metadata call; once it holds all -groups calls, the client closes its
// socket (t0) and the upstream time-stamps each of its connections being closed by the
// service. One process plays client and upstream, so both times come from one monotonic
// clock. Reported: per call (close - t0) and per trial (the last of its calls). Then the
// same with -sse-trials event streams: the last subscriber leaving cancels the shared
// pipeline's refresh, whose metadata calls hang the same way.
//
// Cycles (-cycles, -workers at a time): batches alternating JSON disconnects (the upstream
// hangs; the client closes 0-3 ms after sending, so during the list call or the metadata
// calls) with SSE cycles (subscribe, close after the preamble or after the first snapshot)
// and complete JSON requests. RSS and open files before (after -warmup cycles), every
// 2,000 cycles, right after, and after a settle.
//
//	cancellation -bin .build/release/tributary [-trials 1000] [-cycles 10000] [-groups 10]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tributary/benchmarks/load/harness"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("cancellation: ")
	bin := flag.String("bin", "", "the tributary binary (required)")
	trials := flag.Int("trials", 1000, "JSON disconnect trials timed")
	sseTrials := flag.Int("sse-trials", 200, "SSE trials timed (the last subscriber leaving cancels the shared refresh)")
	groups := flag.Int("groups", 10, "groups in the list = metadata calls in flight per request")
	cycles := flag.Int("cycles", 10000, "connect/disconnect cycles for the memory check")
	warmup := flag.Int("warmup", 1000, "cycles before the 'before' RSS")
	workers := flag.Int("workers", 8, "concurrent clients in the cycles")
	settle := flag.Duration("settle", 5*time.Second, "wait before the settled RSS")
	rst := flag.Bool("rst", false, "disconnect with a TCP reset (SO_LINGER 0) instead of FIN")
	keep := flag.Bool("keep", false, "keep the work directory")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "first wait until the machine is at most this % busy (env QUIET_MAX)")
	quietWait := flag.Duration("quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 600))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: cancellation -bin PATH [-trials N] [-cycles N] [-groups N]")
		os.Exit(2)
	}
	harness.Check(harness.RaiseFileLimit(0))
	work, err := harness.NewWorkspace("cancellation", *keep)
	harness.Check(err)
	up, err := startUpstream(*groups)
	work.Check(err)
	config, err := writeConfig(work.Dir, up.url)
	work.Check(err)
	s, err := work.StartService(*bin, config, "service.log", 1)
	work.Check(err)
	fmt.Printf("cancellation: %d trials x %d metadata calls, %d cycles (%d workers), binary %s\n",
		*trials, *groups, *cycles, *workers, *bin)

	harness.WaitQuiet(*quietMax, *quietWait)
	ok := latency(s, up, *trials, *sseTrials, *groups, *rst)
	ok = cycleMemory(s, up, *cycles, *warmup, *workers, *settle) && ok
	if !s.Alive() {
		fmt.Printf("tributary EXITED: %v\n%s\n", s.ExitErr(), s.LogTail())
		ok = false
	}
	work.Close()
	if !ok {
		os.Exit(1)
	}
}

// MARK: - Latency

type trialResults struct {
	perCall, perTrial, firstClose []time.Duration
	failures                      int
	failure                       string
}

// runTrials: `trials` times, send `request`, wait until the upstream holds all `groups`
// metadata calls, close (t0), and collect when the upstream saw each call's connection close.
func runTrials(s *harness.Service, up *upstream, request []byte, trials, groups int, rst bool) trialResults {
	var r trialResults
	for trial := 0; trial < trials; trial++ {
		drain(up)
		conn, err := net.Dial("tcp", s.Addr)
		if err != nil {
			r.failures++
			r.failure = err.Error()
			continue
		}
		if rst {
			conn.(*net.TCPConn).SetLinger(0)
		}
		conn.Write(request)
		seen := 0
		timeout := time.After(5 * time.Second)
	waitInFlight:
		for seen < groups {
			select {
			case <-up.arrived:
				seen++
			case <-timeout:
				break waitInFlight
			}
		}
		if seen < groups {
			conn.Close()
			r.failures++
			r.failure = fmt.Sprintf("trial %d: only %d of %d metadata calls reached the upstream within 5 s", trial, seen, groups)
			waitHangingZero(up, 8*time.Second)
			continue
		}
		t0 := time.Now()
		conn.Close()
		var last, first time.Duration
		closes := 0
		timeout = time.After(8 * time.Second)
	waitClosed:
		for closes < groups {
			select {
			case at := <-up.closed:
				d := at.Sub(t0)
				r.perCall = append(r.perCall, d)
				if closes == 0 || d < first {
					first = d
				}
				if d > last {
					last = d
				}
				closes++
			case <-timeout:
				break waitClosed
			}
		}
		if closes < groups {
			r.failures++
			r.failure = fmt.Sprintf("trial %d: only %d of %d upstream connections closed within 8 s of the disconnect", trial, closes, groups)
			continue
		}
		r.perTrial = append(r.perTrial, last)
		r.firstClose = append(r.firstClose, first)
	}
	return r
}

func latency(s *harness.Service, up *upstream, trials, sseTrials, groups int, rst bool) bool {
	up.hang.Store(true)
	up.record.Store(true)
	defer up.record.Store(false)
	started := time.Now()
	json := runTrials(s, up, harness.GetRequest("/groups", s.Addr, "application/json"), trials, groups, rst)
	sse := runTrials(s, up, harness.GetRequest("/groups", s.Addr, "text/event-stream"), sseTrials, groups, rst)
	elapsed := time.Since(started)
	fmt.Printf("\ndisconnect -> upstream sees its connection close (%d JSON + %d SSE trials in %.1f s, %s, %d metadata calls in flight each)\n",
		trials, sseTrials, elapsed.Seconds(), map[bool]string{false: "client closes with FIN", true: "client closes with RST"}[rst], groups)
	fmt.Println("| client | measure | samples | p50 ms | p90 ms | p99 ms | max ms | goal | met |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---|")
	row := func(client, name string, values []time.Duration, goal string, met string) {
		sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
		if len(values) == 0 {
			fmt.Printf("| %s | %s | 0 | | | | | %s | NO |\n", client, name, goal)
			return
		}
		fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %s | %s |\n", client, name, len(values), harness.Milliseconds(harness.Percentile(values, 50)),
			harness.Milliseconds(harness.Percentile(values, 90)), harness.Milliseconds(harness.Percentile(values, 99)),
			harness.Milliseconds(values[len(values)-1]), goal, met)
	}
	ok := true
	for _, set := range []struct {
		name    string
		results trialResults
		trials  int
	}{{"JSON GET /groups", json, trials}, {"last SSE subscriber", sse, sseTrials}} {
		if set.trials == 0 {
			continue
		}
		r := set.results
		met := len(r.perTrial) > 0 && r.failures == 0
		if met {
			sorted := append([]time.Duration(nil), r.perTrial...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			met = harness.Percentile(sorted, 99) <= 50*time.Millisecond
		}
		row(set.name, "each upstream call", r.perCall, "", "")
		row(set.name, "first call of a trial", r.firstClose, "", "")
		row(set.name, "all calls of a trial", r.perTrial, "p99 ≤ 50 ms", harness.Yes(met))
		if r.failures > 0 {
			fmt.Printf("%s: FAILED trials: %d (last: %s)\n", set.name, r.failures, r.failure)
		}
		ok = ok && met
	}
	if n := up.oddities.Load(); n > 0 {
		fmt.Printf("the upstream received bytes on %d hanging calls (unexpected)\n", n)
	}
	return ok
}

func drain(up *upstream) {
	for {
		select {
		case <-up.arrived:
		case <-up.closed:
		default:
			return
		}
	}
}

// waitHangingZero waits until no metadata call hangs; how long it took.
func waitHangingZero(up *upstream, limit time.Duration) (time.Duration, bool) {
	started := time.Now()
	for up.hanging.Load() > 0 {
		if time.Since(started) > limit {
			return time.Since(started), false
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(started), true
}

// MARK: - Cycles

type cycleStats struct {
	jsonDisconnects, sseEarly, sseSnapshot, jsonComplete atomic.Int64
	errors                                               atomic.Int64
	lastError                                            atomic.Value
	slowestDrain                                         time.Duration
	undrained                                            int
}

func cycleMemory(s *harness.Service, up *upstream, cycles, warmup, workers int, settle time.Duration) bool {
	stats := &cycleStats{}
	const batch = 200
	runCycles := func(count int, batchIndex *int) {
		for done := 0; done < count; {
			n := batch
			if count-done < n {
				n = count - done
			}
			hang := *batchIndex%2 == 0
			*batchIndex++
			up.hang.Store(hang)
			runBatch(s, n, workers, hang, stats)
			if hang {
				took, ok := waitHangingZero(up, 8*time.Second)
				if !ok {
					stats.undrained++
				}
				if took > stats.slowestDrain {
					stats.slowestDrain = took
				}
			}
			done += n
		}
	}
	batchIndex := 0
	runCycles(warmup, &batchIndex)
	warmupErrors := stats.errors.Load()
	stats = &cycleStats{} // count the measured cycles only
	time.Sleep(2 * time.Second)
	upstreamPort := harness.PortOfURL(up.url)
	type sample struct {
		label                  string
		rss, fds               int
		clients, upstreamConns int
		subs, pip              string
	}
	take := func(label string) sample {
		subs, pipelines := s.Gauges("groups")
		clients, upstreams := s.Sockets(upstreamPort)
		return sample{label, s.RSSKiB(), s.OpenFiles(), clients, upstreams, subs, pipelines}
	}
	samples := []sample{take(fmt.Sprintf("before (after %d warm-up cycles + 2 s)", warmup))}
	started := time.Now()
	for done := 0; done < cycles; {
		n := 2000
		if cycles-done < n {
			n = cycles - done
		}
		runCycles(n, &batchIndex)
		done += n
		samples = append(samples, take(fmt.Sprintf("after %d cycles", done)))
	}
	elapsed := time.Since(started)
	time.Sleep(settle)
	samples = append(samples, take(fmt.Sprintf("after %d cycles + %s settle", cycles, settle)))

	fmt.Printf("\n%d connect/disconnect cycles in %.1f s: %d JSON disconnects, %d SSE closed after the preamble, %d SSE closed after a snapshot, %d complete JSON; %d client errors\n",
		cycles, elapsed.Seconds(), stats.jsonDisconnects.Load(), stats.sseEarly.Load(), stats.sseSnapshot.Load(), stats.jsonComplete.Load(), stats.errors.Load())
	if stats.errors.Load() > 0 {
		fmt.Printf("last client error: %v\n", stats.lastError.Load())
	}
	if warmupErrors > 0 {
		fmt.Printf("(%d client errors during the warm-up)\n", warmupErrors)
	}
	fmt.Printf("hanging upstream calls all closed within %.0f ms after each disconnect batch (%d batches left calls hanging > 8 s)\n",
		float64(stats.slowestDrain)/1e6, stats.undrained)
	fmt.Println("| when | RSS KiB | open fds | client conns | upstream conns (pool) | sse subscribers | live pipelines |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, sample := range samples {
		fmt.Printf("| %s | %d | %d | %d | %d | %s | %s |\n", sample.label, sample.rss, sample.fds, sample.clients, sample.upstreamConns, sample.subs, sample.pip)
	}
	before, after, settled := samples[0], samples[len(samples)-2], samples[len(samples)-1]
	growth := settled.rss - before.rss
	// Noise: what RSS does between samples without a trend. A leak of even 64 B per cycle
	// would add 640 KiB over 10,000 cycles; allow the larger of 512 KiB and 1% of the RSS.
	noise := before.rss / 100
	if noise < 512 {
		noise = 512
	}
	// Idle keep-alive upstream connections come and go with the pool; file descriptors
	// other than the pool's must come back to where they were.
	otherBefore := before.fds - before.upstreamConns
	otherSettled := settled.fds - settled.upstreamConns
	met := growth <= noise && stats.errors.Load() == 0 && stats.undrained == 0
	fmt.Println("| measure | value | goal | met |")
	fmt.Println("|---|---:|---:|---|")
	fmt.Printf("| RSS growth, settled - before | %+d KiB (%+.1f%%, %+.0f B/cycle) | ≤ noise (%d KiB) | %s |\n", growth,
		100*float64(growth)/float64(before.rss), float64(growth)*1024/float64(cycles), noise, harness.Yes(met))
	fmt.Printf("| RSS growth, right after - before | %+d KiB | | |\n", after.rss-before.rss)
	fmt.Printf("| open fds except the upstream pool, settled - before | %+d | 0 | %s |\n", otherSettled-otherBefore, harness.Yes(otherSettled <= otherBefore))
	fmt.Printf("| client connections still open, settled | %d | 0 | %s |\n", settled.clients, harness.Yes(settled.clients == 0))
	return met && otherSettled <= otherBefore && settled.clients == 0
}

func runBatch(s *harness.Service, count, workers int, hang bool, stats *cycleStats) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			random := rand.New(rand.NewSource(seed))
			for int(next.Add(1)) <= count {
				var err error
				if hang {
					err = jsonDisconnect(s.Addr, random)
					stats.jsonDisconnects.Add(1)
				} else {
					switch random.Intn(3) {
					case 0:
						err = sseCycle(s.Addr, false)
						stats.sseEarly.Add(1)
					case 1:
						err = sseCycle(s.Addr, true)
						stats.sseSnapshot.Add(1)
					default:
						err = jsonComplete(s.Addr)
						stats.jsonComplete.Add(1)
					}
				}
				if err != nil {
					stats.errors.Add(1)
					stats.lastError.Store(err.Error())
				}
			}
		}(time.Now().UnixNano() + int64(w))
	}
	wg.Wait()
}

func jsonDisconnect(addr string, random *rand.Rand) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	_, err = conn.Write(harness.GetRequest("/groups", addr, ""))
	time.Sleep(time.Duration(random.Intn(3000)) * time.Microsecond)
	conn.Close()
	return err
}

// sseCycle subscribes and closes after the preamble (`event: stream`) or after the first
// snapshot.
func sseCycle(addr string, untilSnapshot bool) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(harness.GetRequest("/groups", addr, "text/event-stream")); err != nil {
		return err
	}
	reader := bufio.NewReader(conn)
	status, err := reader.ReadString('\n')
	if err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		return fmt.Errorf("sse: %s", strings.TrimSpace(status))
	}
	want := "event: stream"
	if untilSnapshot {
		want = "event: snapshot"
	}
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			return fmt.Errorf("sse: waiting for %q: %w", want, err)
		}
		if strings.HasPrefix(line, want) {
			return nil
		}
		if strings.HasPrefix(line, "event: error") {
			return fmt.Errorf("sse: an error event")
		}
	}
}

var plainClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func jsonComplete(addr string) error {
	response, err := plainClient.Get("http://" + addr + "/groups")
	if err != nil {
		return err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return err
	}
	if response.StatusCode != 200 || !strings.HasPrefix(string(body), "[") {
		return fmt.Errorf("GET /groups: %d %s", response.StatusCode, body)
	}
	return nil
}
