// first-event: how long a new live stream waits for its first document, with and without
// progressive=true, when one detail of the list is slow.
//
// The tool's own upstream serves -groups groups, each group's details after -detail (20 ms),
// one group's (the middle one) after -slow (2 s). A fresh Tributary (one worker, generated
// config, concurrency = the group count so every detail is asked at once, no interval
// refresh) serves /groups. Each round opens -streams event streams of /groups at once (with
// ?progressive=true, or without, by turns), times each one from its connect to the end of
// its first `snapshot` event, then closes them all and waits until the service has stopped the
// pipeline (tributary_live_pipelines is 0), so every round's streams start a pipeline anew:
// 64 streams opening and closing, as a page reloaded by many browsers.
//
// It also times the list call alone (a GET /groups to the upstream, as the service makes it),
// the baseline the goal is stated against: with progressive, p50 ≤ the list call + 15 ms.
//
//	first-event -bin .build/release/tributary [-rounds 10] [-streams 64] [-groups 100] [-detail 20ms] [-slow 2s]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"tributary/benchmarks/load/harness"
)

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	rounds := flag.Int("rounds", 10, "rounds of each mode (progressive and not), alternating")
	streams := flag.Int("streams", 64, "streams opened at once in a round")
	groups := flag.Int("groups", 100, "groups in the list")
	detail := flag.Duration("detail", 20*time.Millisecond, "how long each group's details take")
	slow := flag.Duration("slow", 2*time.Second, "how long the slow group's details take")
	keep := flag.Bool("keep", false, "keep the work directory")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "wait until the machine is at most this % busy first (env QUIET_MAX)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: first-event -bin PATH [-rounds N] [-streams N] [-groups N] [-detail D] [-slow D]")
		os.Exit(2)
	}

	work, err := harness.NewWorkspace("first-event", *keep)
	harness.Check(err)
	slowID := fmt.Sprintf("group-%04d", *groups/2)
	// Every group's details take -detail, the slow group's -slow.
	upstream, err := harness.StartUpstream(harness.UpstreamOptions{Groups: *groups, Changing: *groups,
		DetailDelay: func(id string) time.Duration {
			if id == slowID {
				return *slow
			}
			return *detail
		}})
	work.Check(err)
	url := upstream.URL

	// Every detail asked at once (concurrency and pool ≥ the group count), no interval refresh.
	configPath, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "first-event", UpstreamURL: url,
		Timeout: "10s", PoolSize: *groups + 8, Concurrency: *groups, RefreshInterval: "1h"})
	work.Check(err)
	service, err := work.StartService(*bin, configPath, "service.log", 1)
	work.Check(err)
	defer service.Stop()

	fmt.Printf("first-event: %d rounds x 2 modes, %d streams of /groups at once, %d groups, details %s, one (%s) %s, binary %s\n",
		*rounds, *streams, *groups, *detail, slowID, *slow, *bin)
	harness.WaitQuiet(*quietMax, 30*time.Second)

	// The list call alone, as the service makes it: its latency is the goal's baseline.
	var lists []time.Duration
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 50; i++ {
		started := time.Now()
		response, err := client.Get(url + "/groups")
		work.Check(err)
		response.Body.Close()
		lists = append(lists, time.Since(started))
	}
	sort.Slice(lists, func(i, j int) bool { return lists[i] < lists[j] })
	listP50 := harness.Percentile(lists, 50)

	results := map[bool][]time.Duration{}
	for round := 0; round < 2**rounds; round++ {
		progressive := round%2 == 1
		path := "/groups"
		if progressive {
			path += "?progressive=true"
		}
		times, err := openRound(service.Addr, path, *streams, *slow+10*time.Second)
		work.Check(err)
		results[progressive] = append(results[progressive], times...)
		// Every stream closed: wait for the pipeline to stop, so the next round starts one.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, pipelines := service.Gauges("groups")
			if running, err := strconv.ParseFloat(pipelines, 64); err == nil && running == 0 {
				break
			}
			if time.Now().After(deadline) {
				work.Check(fmt.Errorf("the pipeline did not stop within 10 s of its streams closing (gauge %s)", pipelines))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	fmt.Printf("\nlist call alone (GET /groups to the upstream, 50 times): p50 %.1f ms\n", harness.Milliseconds(listP50))
	fmt.Println("| time to the first snapshot | streams | p50 | p99 | max | goal | met |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---|")
	for _, progressive := range []bool{false, true} {
		times := results[progressive]
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		p50, p99, max := harness.Percentile(times, 50), harness.Percentile(times, 99), times[len(times)-1]
		if progressive {
			goal := listP50 + 15*time.Millisecond
			fmt.Printf("| progressive=true | %d | %.1f ms | %.1f ms | %.1f ms | p50 ≤ %.1f ms (list + 15 ms) | %s |\n", len(times),
				harness.Milliseconds(p50), harness.Milliseconds(p99), harness.Milliseconds(max), harness.Milliseconds(goal), harness.Yes(p50 <= goal))
		} else {
			fmt.Printf("| without | %d | %.1f ms | %.1f ms | %.1f ms | (about the slow detail, %s) | |\n", len(times),
				harness.Milliseconds(p50), harness.Milliseconds(p99), harness.Milliseconds(max), *slow)
		}
	}
	if !service.Alive() {
		work.Check(fmt.Errorf("tributary exited during the run: %v", service.ExitErr()))
	}
	work.Close()
}

// openRound opens `count` event streams of `path` at once and returns, for each, the time
// from its connect to the end of its first snapshot event; then closes them all.
func openRound(addr, path string, count int, limit time.Duration) ([]time.Duration, error) {
	times := make([]time.Duration, count)
	errs := make([]error, count)
	conns := make([]net.Conn, count)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < count; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			started := time.Now()
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = conn
			conn.SetDeadline(started.Add(limit))
			if _, err := conn.Write(harness.GetRequest(path, addr, "text/event-stream")); err != nil {
				errs[i] = err
				return
			}
			reader := bufio.NewReader(conn)
			inSnapshot := false
			for {
				line, err := reader.ReadString('\n')
				if err != nil {
					errs[i] = fmt.Errorf("%s: no snapshot (%v)", path, err)
					return
				}
				// Chunked framing: a chunk-size line may come between; the event lines are whole.
				line = strings.TrimRight(line, "\r\n")
				if line == "event: snapshot" {
					inSnapshot = true
				} else if inSnapshot && line == "" {
					times[i] = time.Since(started)
					return
				}
			}
		}(i)
	}
	close(start)
	wg.Wait()
	for _, conn := range conns {
		if conn != nil {
			conn.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return times, nil
}
