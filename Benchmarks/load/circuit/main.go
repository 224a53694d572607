// circuit: how fast the circuit breaker stops calls to an upstream that went down, and
// whether anything still reaches it while the circuit is open.
//
// One service (the shipped defaults: circuitBreaker failures 5, openFor 10s; retries 1,
// backoff 100ms) over an upstream in this process (net/http, 10 groups). -clients clients
// ask GET /groups back to back the whole time. Each run: the upstream serves (the clients get
// 200s), then goes down at t0 (every call answered 503 at once), and the tool records
//
//   - open after: t0 → the first answer `503 upstream_circuit_open`
//   - that answer's own latency (fast: no upstream call)
//   - calls while open: upstream calls from that first answer until openFor − 500 ms later
//     (goal: zero; the probe comes only after openFor)
//   - answers while open: how many fast 503s the clients got meanwhile
//
// then brings the upstream back and waits for a 200 (the probe closed the circuit) before the
// next run. Medians over -runs.
//
//	circuit -bin .build/release/tributary [-runs 5] [-clients 4] [-open-for 10s]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tributary/benchmarks/load/harness"
)

// callLog time-stamps every upstream call.
type callLog struct {
	mu    sync.Mutex
	calls []time.Time
}

func (u *callLog) record(string) {
	u.mu.Lock()
	u.calls = append(u.calls, time.Now())
	u.mu.Unlock()
}

// callsBetween counts the calls that arrived in [from, to).
func (u *callLog) callsBetween(from, to time.Time) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	count := 0
	for _, at := range u.calls {
		if !at.Before(from) && at.Before(to) {
			count++
		}
	}
	return count
}

// answer is one client request's outcome.
type answer struct {
	at          time.Time // when it completed
	took        time.Duration
	status      int
	circuitOpen bool
}

// clients ask GET /groups back to back until stopped, recording every answer.
type clients struct {
	mu      sync.Mutex
	answers []answer
	stop    atomic.Bool
	wg      sync.WaitGroup
}

func startClients(addr string, count int) *clients {
	c := &clients{}
	transport := &http.Transport{MaxIdleConnsPerHost: count}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	for i := 0; i < count; i++ {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for !c.stop.Load() {
				started := time.Now()
				response, err := client.Get("http://" + addr + "/groups")
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				body, _ := io.ReadAll(response.Body)
				response.Body.Close()
				now := time.Now()
				c.mu.Lock()
				c.answers = append(c.answers, answer{
					at: now, took: now.Sub(started), status: response.StatusCode,
					circuitOpen: response.StatusCode == 503 && strings.Contains(string(body), `"upstream_circuit_open"`),
				})
				c.mu.Unlock()
			}
		}()
	}
	return c
}

// first is the first answer completed at or after `from` for which `match` holds.
func (c *clients) first(from time.Time, match func(answer) bool) (answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.answers {
		if !a.at.Before(from) && match(a) {
			return a, true
		}
	}
	return answer{}, false
}

func (c *clients) count(from, to time.Time, match func(answer) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.answers {
		if !a.at.Before(from) && a.at.Before(to) && match(a) {
			n++
		}
	}
	return n
}

// await polls (every 5 ms) until `condition` holds or `limit` passes.
func await(limit time.Duration, condition func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if condition() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("circuit: ")
	bin := flag.String("bin", "", "the tributary binary (required)")
	runs := flag.Int("runs", 5, "down/up cycles")
	clientCount := flag.Int("clients", 4, "clients asking GET /groups back to back")
	openFor := flag.Duration("open-for", 10*time.Second, "the configured circuitBreaker.openFor (the shipped default)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: circuit -bin PATH [-runs N] [-clients N]")
		os.Exit(2)
	}
	work, err := harness.NewWorkspace("circuit", *keep)
	harness.Check(err)
	// The upstream (10 groups) answers 503 to every call while Failing.
	var calls callLog
	up, err := harness.StartUpstream(harness.UpstreamOptions{Groups: 10, Changing: 10, OnCall: calls.record})
	work.Check(err)
	config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "circuit", UpstreamURL: up.URL, RefreshInterval: "1h"})
	work.Check(err)
	s, err := work.StartService(*bin, config, "service.log", 1)
	work.Check(err)
	fmt.Printf("circuit: %d runs, %d clients on GET /groups, upstream answering 503 while down, breaker defaults (5 failures, open %v), binary %s\n",
		*runs, *clientCount, *openFor, *bin)

	c := startClients(s.Addr, *clientCount)
	ok := true
	var openAfter, fastLatency []time.Duration
	var callsOpen, answersOpen []int
	for run := 1; run <= *runs; run++ {
		up.Failing.Store(false)
		since := time.Now()
		if !await(*openFor+10*time.Second, func() bool {
			_, served := c.first(since, func(a answer) bool { return a.status == 200 })
			return served
		}) {
			fmt.Printf("run %d: no 200 from the service with the upstream up\n", run)
			ok = false
			break
		}
		t0 := time.Now()
		up.Failing.Store(true)
		var refused answer
		if !await(10*time.Second, func() bool {
			var found bool
			refused, found = c.first(t0, func(a answer) bool { return a.circuitOpen })
			return found
		}) {
			fmt.Printf("run %d: no 503 upstream_circuit_open within 10 s of the upstream going down\n", run)
			ok = false
			break
		}
		windowEnd := refused.at.Add(*openFor - 500*time.Millisecond)
		time.Sleep(time.Until(windowEnd))
		calls := calls.callsBetween(refused.at, windowEnd)
		answers := c.count(refused.at, windowEnd, func(a answer) bool { return a.circuitOpen })
		openAfter = append(openAfter, refused.at.Sub(t0))
		fastLatency = append(fastLatency, refused.took)
		callsOpen = append(callsOpen, calls)
		answersOpen = append(answersOpen, answers)
		fmt.Printf("run %d: first upstream_circuit_open %.1f ms after the upstream went down (answered in %.2f ms); "+
			"while open (%.1f s): %d upstream calls, %d fast 503s\n",
			run, harness.Milliseconds(refused.at.Sub(t0)), harness.Milliseconds(refused.took),
			windowEnd.Sub(refused.at).Seconds(), calls, answers)
	}
	c.stop.Store(true)
	c.wg.Wait()
	if len(openAfter) > 0 {
		sort.Slice(openAfter, func(i, j int) bool { return openAfter[i] < openAfter[j] })
		sort.Slice(fastLatency, func(i, j int) bool { return fastLatency[i] < fastLatency[j] })
		sort.Ints(callsOpen)
		sort.Ints(answersOpen)
		fmt.Printf("median of %d: open after %.1f ms, fast 503 in %.2f ms, %d upstream calls while open (max %d), %d fast 503s while open\n",
			len(openAfter), harness.Milliseconds(openAfter[len(openAfter)/2]), harness.Milliseconds(fastLatency[len(fastLatency)/2]),
			callsOpen[len(callsOpen)/2], callsOpen[len(callsOpen)-1], answersOpen[len(answersOpen)/2])
		if callsOpen[len(callsOpen)-1] != 0 {
			ok = false
		}
	}
	if !s.Alive() {
		fmt.Printf("tributary EXITED: %v\n%s\n", s.ExitErr(), s.LogTail())
		ok = false
	}
	work.Close()
	if !ok {
		os.Exit(1)
	}
}
