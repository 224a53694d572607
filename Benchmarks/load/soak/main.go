// soak: Tributary under a mixed load against an upstream that misbehaves, for -seconds.
//
// Load (all on loopback, bounded in count and time):
//   - -json-workers clients looping GET /groups (10 ms apart); -abort of them give up after
//     1-50 ms (a disconnect that cancels the pipeline);
//   - -subscribers event streams that each live 0.5-8 s, then close and are replaced;
//   - POST /groups/reload every -reload-every;
//   - the upstream injects a fault (reset, hang, garbage, slow) into -fault-rate of its calls.
//
// Checks: the service never exits; every 5xx a JSON client sees is an upstream error of the
// list call whose kind was injected into list calls, no more of them than were injected;
// items marked failed in 200 answers likewise against metadata faults; 200 answers hold every
// group in order; no event stream ends early; every reload is accepted; RSS (sampled every
// -sample-every) stays within 5% after the warm-up; after the load every stream, pipeline and
// client connection is gone; the service stops cleanly on SIGTERM.
//
//	soak -bin .build/release/tributary [-seconds 600] [-seed N]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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
	"time"

	"tributary/benchmarks/load/harness"
)

// tally counts named outcomes, safely from any goroutine.
type tally struct {
	mutex  sync.Mutex
	counts map[string]int
	sample map[string]string
}

func newTally() *tally { return &tally{counts: map[string]int{}, sample: map[string]string{}} }

func (t *tally) add(key, example string) {
	t.mutex.Lock()
	t.counts[key]++
	if _, ok := t.sample[key]; !ok && example != "" {
		t.sample[key] = example
	}
	t.mutex.Unlock()
}

func (t *tally) get(key string) int {
	t.mutex.Lock()
	defer t.mutex.Unlock()
	return t.counts[key]
}

func (t *tally) keys() []string {
	t.mutex.Lock()
	defer t.mutex.Unlock()
	var keys []string
	for key := range t.counts {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

type stats struct {
	json        *tally // "200", "aborted", "5xx <status> <code> list|item-path", "unexpected ..."
	itemErrors  *tally // error codes of items marked failed in 200 answers
	sse         *tally // "opened", "closed by client", "snapshot", "error <code>", "heartbeat", "unexpected ..."
	reloads     *tally // "202", "unexpected ..."
	jsonLatency []time.Duration
	latencyLock sync.Mutex
}

type sample struct {
	at          time.Duration
	rss, fds    int
	cpuPercent  float64
	subscribers int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("soak: ")
	bin := flag.String("bin", "", "the tributary binary (required)")
	seconds := flag.Int("seconds", 600, "soak duration in seconds")
	warmupFlag := flag.Int("warmup", -1, "seconds excluded from the RSS check (default: 20% of -seconds, at least 10)")
	jsonWorkers := flag.Int("json-workers", 8, "JSON clients")
	abort := flag.Float64("abort", 0.1, "fraction of JSON requests the client abandons after 1-50 ms")
	subscribers := flag.Int("subscribers", 50, "event streams open at a time (each lives 0.5-8 s)")
	reloadEvery := flag.Duration("reload-every", 300*time.Millisecond, "POST /groups/reload interval")
	faultRate := flag.Float64("fault-rate", 0.02, "fraction of upstream calls with an injected fault")
	groups := flag.Int("groups", 10, "groups in the upstream's list")
	sampleEvery := flag.Duration("sample-every", 5*time.Second, "RSS sampling interval")
	seed := flag.Int64("seed", time.Now().UnixNano()%1_000_000, "random seed (faults, client timing)")
	rssTolerance := flag.Float64("rss-tolerance", 5, "allowed RSS spread after warm-up, percent")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: soak -bin PATH [-seconds N] [-seed N]")
		os.Exit(2)
	}
	warmup := *warmupFlag
	if warmup < 0 {
		warmup = *seconds / 5
		if warmup < 10 {
			warmup = 10
		}
	}
	harness.Check(harness.RaiseFileLimit(0))
	work, err := harness.NewWorkspace("soak", *keep)
	harness.Check(err)
	up, err := startUpstream(*groups, *faultRate, *seed)
	work.Check(err)
	config, err := writeConfig(work.Dir, up.url)
	work.Check(err)
	s, err := work.StartService(*bin, config, "service.log", 1)
	work.Check(err)
	fmt.Printf("soak: %d s (RSS checked after %d s), %d JSON clients (%.0f%% abandoned), %d event streams churning, reload every %s, %.1f%% of upstream calls faulty, seed %d\nbinary %s, pid %d\n",
		*seconds, warmup, *jsonWorkers, *abort*100, *subscribers, *reloadEvery, *faultRate*100, *seed, *bin, s.PID)

	st := &stats{json: newTally(), itemErrors: newTally(), sse: newTally(), reloads: newTally()}
	ctx, stop := context.WithTimeout(context.Background(), time.Duration(*seconds)*time.Second)
	var wg sync.WaitGroup
	for w := 0; w < *jsonWorkers; w++ {
		wg.Add(1)
		go func(seed int64) { defer wg.Done(); jsonLoop(ctx, s.Addr, *groups, *abort, seed, st) }(*seed*1000 + int64(w))
	}
	for i := 0; i < *subscribers; i++ {
		wg.Add(1)
		go func(seed int64) { defer wg.Done(); sseLoop(ctx, s.Addr, seed, st) }(*seed*1000 + 500 + int64(i))
	}
	wg.Add(1)
	go func() { defer wg.Done(); reloadLoop(ctx, s.Addr, *reloadEvery, st) }()

	// Sample until the end, or until the service dies.
	started := time.Now()
	var samples []sample
	lastCPU, lastAt, lastMachine := s.CPUTicks(), time.Now(), harness.MachineBusyTicks()
	ticker := time.NewTicker(*sampleEvery)
	died := false
sampling:
	for {
		select {
		case <-ctx.Done():
			break sampling
		case <-s.Done():
			died = true
			stop()
			break sampling
		case now := <-ticker.C:
			cpu, machine := s.CPUTicks(), harness.MachineBusyTicks()
			subs, _ := s.Gauges("groups")
			machinePercent := float64(machine-lastMachine) * 10 / float64(now.Sub(lastAt).Milliseconds()) * 100
			lastMachine = machine
			sm := sample{at: now.Sub(started), rss: s.RSSKiB(), fds: s.OpenFiles(), subscribers: int(gaugeValue(subs)),
				cpuPercent: float64(cpu-lastCPU) * 10 / float64(now.Sub(lastAt).Milliseconds()) * 100}
			lastCPU, lastAt = cpu, now
			samples = append(samples, sm)
			fmt.Printf("  %4.0f s  RSS %6d KiB  fds %4d  CPU %3.0f%% (machine %3.0f%%)  streams %3d  JSON 200 %d, 5xx %d  upstream calls %d\n",
				sm.at.Seconds(), sm.rss, sm.fds, sm.cpuPercent, machinePercent, sm.subscribers, st.json.get("200"), count5xx(st.json),
				up.calls[callList].Load()+up.calls[callMetadata].Load())
		}
	}
	ticker.Stop()
	stop()
	waitBounded(&wg, 15*time.Second)
	jsonTransport.CloseIdleConnections()
	elapsed := time.Since(started)

	// After the load: everything must be gone, and the service must stop cleanly.
	time.Sleep(3 * time.Second)
	var after struct {
		alive                       bool
		health                      int
		subscribers, pipelines      float64
		clients, upstreamConns, rss int
		exitCode                    int
		stopTime                    time.Duration
	}
	after.alive = s.Alive()
	if after.alive {
		after.health = s.Healthz()
		subscribers, pipelines := s.Gauges("groups")
		after.subscribers, after.pipelines = gaugeValue(subscribers), gaugeValue(pipelines)
		after.clients, after.upstreamConns = s.Sockets(harness.PortOfURL(up.url))
		after.rss = s.RSSKiB()
		stopStarted := time.Now()
		s.Stop()
		after.stopTime = time.Since(stopStarted)
	}
	after.exitCode = s.ExitCode()

	ok := report(st, up, samples, warmup, *rssTolerance, elapsed, died, s, after.alive, after.health, after.subscribers,
		after.pipelines, after.clients, after.exitCode, after.stopTime)
	work.Close()
	if *keep {
		fmt.Println("work directory kept:", work.Dir)
	}
	if !ok {
		os.Exit(1)
	}
}

func count5xx(t *tally) int {
	total := 0
	for _, key := range t.keys() {
		if strings.HasPrefix(key, "5xx ") {
			total += t.get(key)
		}
	}
	return total
}

func waitBounded(wg *sync.WaitGroup, limit time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		fmt.Println("warning: some load goroutines did not stop within", limit)
	}
}

// MARK: - Load

var jsonTransport = &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}

func jsonLoop(ctx context.Context, addr string, groups int, abort float64, seed int64, st *stats) {
	random := rand.New(rand.NewSource(seed))
	client := &http.Client{Transport: jsonTransport, Timeout: 10 * time.Second}
	for ctx.Err() == nil {
		requestCtx, cancel := context.WithCancel(ctx)
		abandoned := random.Float64() < abort
		if abandoned {
			requestCtx, cancel = context.WithTimeout(ctx, time.Millisecond+time.Duration(random.Intn(50))*time.Millisecond)
		}
		request, _ := http.NewRequestWithContext(requestCtx, "GET", "http://"+addr+"/groups", nil)
		started := time.Now()
		response, err := client.Do(request)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(response.Body)
			response.Body.Close()
		}
		expired := requestCtx.Err() != nil // our abandon timer fired, or the soak ended
		cancel()
		switch {
		case err != nil && expired:
			st.json.add("aborted by the client", "")
		case err != nil:
			st.json.add("unexpected: transport error", err.Error())
		default:
			classify(response.StatusCode, body, groups, st)
			st.latencyLock.Lock()
			st.jsonLatency = append(st.jsonLatency, time.Since(started))
			st.latencyLock.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func classify(status int, body []byte, groups int, st *stats) {
	switch {
	case status == 200:
		var items []map[string]any
		if err := json.Unmarshal(body, &items); err != nil {
			st.json.add("unexpected: 200 with a body that is not a JSON array", string(body))
			return
		}
		if len(items) != groups {
			st.json.add(fmt.Sprintf("unexpected: 200 with %d groups", len(items)), string(body))
			return
		}
		for i, item := range items {
			if item["id"] != fmt.Sprintf("group-%04d", i) {
				st.json.add("unexpected: 200 with groups out of order", string(body))
				return
			}
			if failure, ok := item["error"].(map[string]any); ok {
				code, _ := failure["code"].(string)
				st.itemErrors.add(code, fmt.Sprint(failure["message"]))
			} else if _, ok := item["taskCount"]; !ok {
				st.json.add("unexpected: 200 with an item lacking taskCount and error", string(body))
				return
			}
		}
		st.json.add("200", "")
	case status >= 500:
		var answer errorBody
		json.Unmarshal(body, &answer)
		where := "other path"
		if strings.Contains(answer.Error.Message, "GET /groups ") {
			where = "list call"
		} else if strings.Contains(answer.Error.Message, "/metadata") {
			where = "metadata call"
		}
		st.json.add(fmt.Sprintf("5xx %d %s (%s)", status, answer.Error.Code, where), answer.Error.Message)
	default:
		st.json.add(fmt.Sprintf("unexpected: status %d", status), string(body))
	}
}

// sseLoop keeps one event stream open at a time, each for 0.5-8 s.
func sseLoop(ctx context.Context, addr string, seed int64, st *stats) {
	random := rand.New(rand.NewSource(seed))
	// Stagger the first connections over the first second.
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(random.Intn(1000)) * time.Millisecond):
	}
	for ctx.Err() == nil {
		lifetime := 500*time.Millisecond + time.Duration(random.Int63n(int64(7500*time.Millisecond)))
		subscribe(ctx, addr, lifetime, st)
	}
}

func subscribe(ctx context.Context, addr string, lifetime time.Duration, st *stats) {
	end := time.Now().Add(lifetime)
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(end) {
		end = deadline
	}
	if time.Until(end) < 100*time.Millisecond {
		time.Sleep(time.Until(end))
		return
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		st.sse.add("unexpected: connect failed", err.Error())
		return
	}
	defer conn.Close()
	conn.SetDeadline(end)
	if _, err := conn.Write(harness.GetRequest("/groups", addr, "text/event-stream")); err != nil {
		st.sse.add("unexpected: write failed", err.Error())
		return
	}
	reader := bufio.NewReader(conn)
	status, err := reader.ReadString('\n')
	if err != nil {
		if isTimeout(err) {
			st.sse.add("closed by the client before the headers", "")
			return
		}
		st.sse.add("unexpected: no status line", err.Error())
		return
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		st.sse.add("unexpected: status "+strings.TrimSpace(status), "")
		return
	}
	st.sse.add("opened", "")
	// Chunked: sizes and data lines interleave; only `event:`, `data:` and `:` lines matter.
	event := ""
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			if isTimeout(err) {
				st.sse.add("closed by the client", "")
			} else {
				st.sse.add("unexpected: stream ended by the server", err.Error())
			}
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
			if event == "snapshot" || event == "stream" {
				st.sse.add("event "+event, "")
			}
		case strings.HasPrefix(line, "data: ") && event == "error":
			var answer errorBody
			json.Unmarshal([]byte(line[6:]), &answer)
			st.sse.add("event error "+answer.Error.Code, answer.Error.Message)
			event = ""
		case strings.HasPrefix(line, ": heartbeat"):
			st.sse.add("heartbeat", "")
		}
	}
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

func reloadLoop(ctx context.Context, addr string, every time.Duration, st *stats) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		response, err := client.Post("http://"+addr+"/groups/reload", "application/json", nil)
		if err != nil {
			if ctx.Err() == nil {
				st.reloads.add("unexpected: transport error", err.Error())
			}
			continue
		}
		io.Copy(io.Discard, response.Body)
		response.Body.Close()
		if response.StatusCode == 202 {
			st.reloads.add("202", "")
		} else {
			st.reloads.add(fmt.Sprintf("unexpected: status %d", response.StatusCode), "")
		}
	}
}

// gaugeValue is the number a gauge of Service.Gauges shows, -1 if it is unknown.
func gaugeValue(gauge string) float64 {
	if gauge == "?" {
		return -1
	}
	var value float64
	fmt.Sscanf(gauge, "%g", &value)
	return value
}

// MARK: - Report

func report(st *stats, up *upstream, samples []sample, warmup int, tolerance float64, elapsed time.Duration, died bool,
	s *harness.Service, alive bool, health int, subscribers, pipelines float64, clients, exitCode int, stopTime time.Duration) bool {
	ok := true
	verdict := func(good bool) string {
		if !good {
			ok = false
			return "NO"
		}
		return "yes"
	}
	fmt.Printf("\nsoak ran %.0f s\n", elapsed.Seconds())

	// Faults injected and what clients saw.
	fmt.Println("\n| upstream fault | list calls | metadata calls | JSON 5xx from list calls (≤ injected) | items marked failed (≤ injected) | explained |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	expected := map[int]struct{ status, code string }{
		faultReset: {"502", "upstream_unavailable"}, faultHang: {"504", "upstream_timeout"}, faultGarbage: {"502", "upstream_malformed"},
	}
	explained := 0
	for fault := faultReset; fault < faultKinds; fault++ {
		list, meta := up.injected[callList][fault].Load(), up.injected[callMetadata][fault].Load()
		seen, marked := 0, 0
		if e, ok := expected[fault]; ok {
			seen = st.json.get(fmt.Sprintf("5xx %s %s (list call)", e.status, e.code))
			marked = st.itemErrors.get(e.code)
		}
		explained += seen
		fmt.Printf("| %s | %d | %d | %d | %d | %s |\n", faultNames[fault], list, meta, seen, marked,
			verdict(int64(seen) <= list && int64(marked) <= meta))
	}
	fmt.Printf("| (none) | %d | %d | | | |\n", up.injected[callList][faultNone].Load(), up.injected[callMetadata][faultNone].Load())
	total5xx := count5xx(st.json)
	unexplained := total5xx - explained
	for _, code := range st.itemErrors.keys() {
		if code != "upstream_unavailable" && code != "upstream_timeout" && code != "upstream_malformed" {
			fmt.Printf("item error %q not explained by any fault: %d, e.g. %s\n", code, st.itemErrors.get(code), st.itemErrors.sample[code])
			ok = false
		}
	}

	fmt.Println("\n| client outcome | count |")
	fmt.Println("|---|---:|")
	for _, t := range []struct {
		name string
		t    *tally
	}{{"JSON", st.json}, {"SSE", st.sse}, {"reload", st.reloads}} {
		for _, key := range t.t.keys() {
			fmt.Printf("| %s: %s | %d |\n", t.name, key, t.t.get(key))
		}
	}
	st.latencyLock.Lock()
	latencies := append([]time.Duration(nil), st.jsonLatency...)
	st.latencyLock.Unlock()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if len(latencies) > 0 {
		fmt.Printf("JSON latency (answered requests): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			harness.Milliseconds(latencies[len(latencies)/2]), harness.Milliseconds(latencies[(len(latencies)*99)/100]), harness.Milliseconds(latencies[len(latencies)-1]))
	}
	var unexpected []string
	for _, t := range []*tally{st.json, st.sse, st.reloads} {
		for _, key := range t.keys() {
			if strings.HasPrefix(key, "unexpected") {
				unexpected = append(unexpected, fmt.Sprintf("%s x%d (e.g. %.300s)", key, t.get(key), t.sample[key]))
			}
		}
	}
	for _, key := range st.json.keys() {
		if strings.HasPrefix(key, "5xx ") && !strings.HasSuffix(key, "(list call)") {
			unexpected = append(unexpected, fmt.Sprintf("JSON %s x%d (e.g. %.300s)", key, st.json.get(key), st.json.sample[key]))
		}
	}

	// RSS after the warm-up.
	var steady []sample
	for _, sm := range samples {
		if sm.at >= time.Duration(warmup)*time.Second {
			steady = append(steady, sm)
		}
	}
	fmt.Println("\n| check | value | goal | met |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| service alive throughout | %s | no crash | %s |\n", map[bool]string{true: "yes", false: "EXITED"}[!died && alive], verdict(!died && alive))
	fmt.Printf("| JSON 5xx | %d, all upstream errors of list calls: %d | ≤ injected list faults, by kind | %s |\n", total5xx, explained, verdict(unexplained == 0))
	fmt.Printf("| unexpected client outcomes | %d kinds | 0 | %s |\n", len(unexpected), verdict(len(unexpected) == 0))
	if len(steady) >= 2 {
		low, high := steady[0].rss, steady[0].rss
		for _, sm := range steady {
			if sm.rss < low {
				low = sm.rss
			}
			if sm.rss > high {
				high = sm.rss
			}
		}
		spread := 100 * float64(high-low) / float64(low)
		drift := 100 * float64(steady[len(steady)-1].rss-steady[0].rss) / float64(steady[0].rss)
		fmt.Printf("| RSS after %d s warm-up (%d samples) | %d → %d KiB, range %d-%d, spread %.1f%%, drift %+.1f%% | spread ≤ %.0f%% | %s |\n",
			warmup, len(steady), steady[0].rss, steady[len(steady)-1].rss, low, high, spread, drift, tolerance, verdict(spread <= tolerance))
	} else {
		fmt.Printf("| RSS after warm-up | too few samples (%d) | | %s |\n", len(steady), verdict(false))
	}
	fmt.Printf("| after the load: /healthz, streams, pipelines, client connections | %d, %.0f, %.0f, %d | 200, 0, 0, 0 | %s |\n",
		health, subscribers, pipelines, clients, verdict(health == 200 && subscribers == 0 && pipelines == 0 && clients == 0))
	fmt.Printf("| stop on SIGTERM | exit %d in %.0f ms | exit 0 | %s |\n", exitCode, harness.Milliseconds(stopTime), verdict(exitCode == 0))
	for _, line := range unexpected {
		fmt.Println("  unexpected:", line)
	}
	if died || !alive {
		fmt.Printf("service exit: %v\nlog tail:\n%s\n", s.ExitErr(), s.LogTail())
	}
	if ok {
		fmt.Println("\nsoak: PASS")
	} else {
		fmt.Println("\nsoak: FAIL")
	}
	return ok
}
