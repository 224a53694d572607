// keyed-scale: what a live pipeline of its own costs when the sharing key splits the
// subscribers (issues 28 and 29): by parameter values, and by identity.
//
//	params:   -values distinct team values x -per-value streams of GET /teams/{team}/groups
//	          (1,000 x 3: 3,000 streams, 1,000 live pipelines)
//	identity: -identities distinct bearer tokens x -per-identity streams of GET /me/groups, whose
//	          upstream forwards Authorization: each token is an identity, with its own pipeline
//	          (1,000 x 5: 5,000 streams, 1,000 pipelines)
//
// For each mode and run: start a fresh Tributary (one worker, a generated config with
// maxLivePipelines, server.maxIdentities, sse.maxSubscribers, server.maxConnections and the
// upstream's queue above the counts, no interval refresh) on this tool's own upstream; warm it
// up with 50 keys of one stream each, closed again; read its RSS; open the streams from one
// epoll loop and wait until each has its first snapshot; read the RSS again:
// (after - before) / keys is the RSS per live pipeline, its streams included. Then -updates
// times: bump the upstream's version, POST /{resource}/reload (every pipeline of the
// resource refreshes: keys x (groups + 1) upstream calls), and time-stamp, for every stream,
// when the snapshot with the new version arrives, relative to the moment just before the
// reload was sent.
//
// With -baseline (the default) each mode is run a second time, with a fresh service, with
// the same number of streams on ONE key (one pipeline): the difference of the two RSS
// deltas, / (keys - 1), is what a pipeline costs beyond its streams, and the baseline's
// update p99 is what the same fan-out costs without the keyed refreshes.
//
// The main goroutine, which the harness keeps on the main thread, starts the service and
// runs the epoll loop.
//
//	keyed-scale -bin .build/release/tributary [-modes params,identity] [-values 1000] [-per-value 3]
//	            [-identities 1000] [-per-identity 5] [-groups 10] [-runs 1] [-updates 5] [-baseline=true]
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
	"time"

	"tributary/benchmarks/load/harness"
)

// mode is one way of splitting the subscribers: its resource, and how a subscriber asks for
// its key (a path, or a header).
type mode struct {
	name     string // params or identity
	resource string
	keys     int // distinct keys of the measured run
	perKey   int // streams per key
}

func (m mode) streams() int { return m.keys * m.perKey }

// request is what subscribers with `keys` distinct keys ask for: subscriber i has key
// i % keys, through paths[i % len(paths)] and headers[i % len(headers)]. prefix tells
// warm-up keys apart from measured ones.
func (m mode) request(keys int, prefix string) (paths, headers []string) {
	for k := 0; k < keys; k++ {
		switch m.name {
		case "params":
			paths = append(paths, fmt.Sprintf("/teams/%s-%04d/groups", prefix, k))
		case "identity":
			headers = append(headers, fmt.Sprintf("Authorization: Bearer %s-%04d\r\n", prefix, k))
		}
	}
	if m.name == "identity" {
		paths = []string{"/me/groups"}
	}
	return paths, headers
}

type roundResult struct {
	p50, p99, max, ack time.Duration
	missed             int
	calls              int64 // upstream calls the update caused
	cpuMS, otherMS     int
}

type runResult struct {
	keys                                 int
	rssBefore, rssAfter, rssAfterUpdates int // KiB
	pipelines                            string
	connectTime                          time.Duration
	lost, errors                         int
	rounds                               []roundResult
}

func (r runResult) delta() float64        { return float64(r.rssAfter-r.rssBefore) * 1024 }
func (r runResult) deltaUpdated() float64 { return float64(r.rssAfterUpdates-r.rssBefore) * 1024 }

func main() {
	log.SetFlags(0)
	log.SetPrefix("keyed-scale: ")
	bin := flag.String("bin", "", "the tributary binary (required)")
	modes := flag.String("modes", "params,identity", "what splits the subscribers: params, identity, or both")
	values := flag.Int("values", 1000, "params: distinct team values (live pipelines)")
	perValue := flag.Int("per-value", 3, "params: streams per value")
	identities := flag.Int("identities", 1000, "identity: distinct bearer tokens (live pipelines)")
	perIdentity := flag.Int("per-identity", 5, "identity: streams per token")
	groups := flag.Int("groups", 10, "groups in each list (each pipeline refresh: 1 + groups upstream calls)")
	runs := flag.Int("runs", 1, "runs, each with fresh services")
	updates := flag.Int("updates", 5, "updates timed per run")
	baseline := flag.Bool("baseline", true, "also run each mode with the same streams on one key (one pipeline)")
	connecting := flag.Int("connecting", 256, "streams connecting at once (until they have their first snapshots)")
	keep := flag.Bool("keep", false, "keep the work directory (config, service logs)")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "before each run, wait until the machine is at most this % busy (env QUIET_MAX)")
	quietWait := flag.Duration("quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 600))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: keyed-scale -bin PATH [-modes params,identity] [-values N] [-identities N] [-runs R] [-updates U]")
		os.Exit(2)
	}
	var chosen []mode
	for _, name := range strings.Split(*modes, ",") {
		switch name {
		case "params":
			chosen = append(chosen, mode{name: name, resource: "teamgroups", keys: *values, perKey: *perValue})
		case "identity":
			chosen = append(chosen, mode{name: name, resource: "mygroups", keys: *identities, perKey: *perIdentity})
		default:
			harness.Check(fmt.Errorf("-modes: params, identity or params,identity (found %q)", *modes))
		}
	}
	most := 0
	for _, m := range chosen {
		if m.streams() > most {
			most = m.streams()
		}
		if m.keys < 2 {
			harness.Check(fmt.Errorf("%s: at least 2 keys", m.name))
		}
	}
	harness.Check(harness.RaiseFileLimit(most + 200))

	work, err := harness.NewWorkspace("keyed-scale", *keep)
	harness.Check(err)
	// The upstream's team groups (/teams/{team}/groups) and own groups (/me/groups, which
	// answers 401 and counts a call without Authorization: the service must forward the
	// client's header on every call a stream causes, refreshes included), every group's
	// metadata carrying the version as taskCount.
	up, err := harness.StartUpstream(harness.UpstreamOptions{Groups: *groups, Changing: *groups})
	work.Check(err)
	config, err := writeConfig(work.Dir, up.URL, most, *values, *identities, *groups)
	work.Check(err)
	fmt.Printf("keyed-scale: modes %s, %d groups per list, %d runs x %d updates, baseline %v, 1 worker, binary %s\n",
		*modes, *groups, *runs, *updates, *baseline, *bin)

	keyed := map[string][]runResult{}
	single := map[string][]runResult{}
	for run := 1; run <= *runs; run++ {
		for _, m := range chosen {
			variants := []int{m.keys}
			if *baseline {
				variants = append(variants, 1)
			}
			for _, keys := range variants {
				label := fmt.Sprintf("%s, %d keys x %d streams", m.name, keys, m.streams()/keys)
				service, err := work.StartService(*bin, config, fmt.Sprintf("service-%d-%s-%d.log", run, m.name, keys), 1)
				work.Check(err)
				fmt.Printf("\nrun %d (%s): service pid %d on %s\n", run, label, service.PID, service.Addr)
				harness.WaitQuiet(*quietMax, *quietWait)
				result, err := measure(service, up, m, keys, *updates, *connecting)
				service.Stop()
				if err != nil {
					fmt.Fprintf(os.Stderr, "service log: %s\n", service.LogTail())
				}
				work.Check(err)
				printRun(label, result, m)
				if keys == 1 {
					single[m.name] = append(single[m.name], result)
				} else {
					keyed[m.name] = append(keyed[m.name], result)
				}
			}
		}
	}
	fmt.Printf("\nupstream calls without the forwarded Authorization (must be 0): %d\n", up.Unforwarded.Load())
	for _, m := range chosen {
		printSummary(m, keyed[m.name], single[m.name], *groups)
	}
	work.Close()
	if up.Unforwarded.Load() > 0 {
		os.Exit(1)
	}
}

// writeConfig writes a configuration with the two keyed resources on upstream `url`, limits
// above `streams` streams and the key counts, and no interval refresh (updates come only from
// POST /{resource}/reload), so every snapshot a client sees is one we caused. A reload makes
// keys x (groups + 1) upstream calls at once on one worker: the queue for an upstream
// connection and the call timeout (which counts the wait for a connection) are raised so that
// the tool measures the fan-out rather than the 503s of a full queue; the breaker is off.
// Every stream is one client (loopback): it must be let start every pipeline and identity.
func writeConfig(dir, url string, streams, values, identities, groups int) (string, error) {
	most := values
	if identities > most {
		most = identities
	}
	return harness.WriteConfig(dir, harness.Config{Tool: "keyed-scale", UpstreamURL: url,
		MaxConnections: streams + 1000, MaxIdentities: identities + 1000, MaxClientShare: 100, MaxSubscribers: streams + 1000,
		Timeout: "30s", MaxQueue: most*(groups+1) + 10000, NoBreaker: true, Accounts: true, RefreshInterval: "1h", Lists: []harness.List{
			{Name: "teamgroups", Upstream: "tasks", Route: "/teams/{team}/groups", Team: true,
				List: "/teams/{team}/groups", Details: "/teams/{team}/groups/{id}/metadata", MaxLive: values + 1000},
			{Name: "mygroups", Upstream: "accounts", Route: "/me/groups", List: "/me/groups", Details: "/me/groups/{id}/metadata", MaxLive: identities + 1000},
		}})
}

func measure(s *harness.Service, up *harness.Upstream, m mode, keys, updates, connecting int) (runResult, error) {
	result := runResult{keys: keys}
	count := m.streams()
	// Warm-up: the code paths, 50 pipelines and the allocator's first arenas; closed again, so
	// their pipelines are released before the RSS is read.
	warmPaths, warmHeaders := m.request(50, "warm")
	warm, err := harness.NewSSEClients([]int{s.Port}, warmPaths, 50, connecting)
	if err != nil {
		return result, err
	}
	warm.Headers = warmHeaders
	ok, err := warm.Run(time.Now().Add(30*time.Second), func() bool { return warm.Next == 50 && warm.FirstSnapshots+warm.Lost >= 50 })
	warm.CloseAll()
	if err != nil || !ok || warm.Lost > 0 {
		return result, fmt.Errorf("warm-up failed (err %v, lost %d, e.g. %q)", err, warm.Lost, firstFailure(warm))
	}
	time.Sleep(time.Second)
	result.rssBefore = s.RSSKiB()

	paths, headers := m.request(keys, "k")
	c, err := harness.NewSSEClients([]int{s.Port}, paths, count, connecting)
	if err != nil {
		return result, err
	}
	c.Headers = headers
	defer c.CloseAll()
	started := time.Now()
	ok, err = c.Run(started.Add(180*time.Second), func() bool { return c.Next == count && c.FirstSnapshots+c.Lost >= count })
	if err != nil {
		return result, err
	}
	if !ok {
		return result, fmt.Errorf("only %d of %d streams had their snapshots after 180 s (%d lost, e.g. %q; %d error events)",
			c.FirstSnapshots, count, c.Lost, firstFailure(c), c.Errors)
	}
	result.connectTime = time.Since(started)
	if c.Lost > 0 {
		return result, fmt.Errorf("%d of %d streams failed while connecting, e.g. %q", c.Lost, count, firstFailure(c))
	}
	c.Run(time.Now().Add(2*time.Second), func() bool { return false }) // settle, still reading
	result.rssAfter = s.RSSKiB()
	_, result.pipelines = s.Gauges(m.resource)

	reloader := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for round := 0; round < updates; round++ {
		version := up.Version.Add(1)
		c.Target = version
		c.Reached = 0
		callsBefore := up.Calls.Load()
		cpuBefore := s.CPUTicks()
		machineBefore := harness.MachineBusyTicks()
		ackCh := make(chan time.Duration, 1)
		var reloadFailure string
		sent := time.Now()
		go func() {
			response, err := reloader.Post("http://"+s.Addr+"/"+m.resource+"/reload", "application/json", nil)
			if err != nil {
				reloadFailure = err.Error()
				ackCh <- -1
				return
			}
			body, _ := io.ReadAll(response.Body)
			response.Body.Close()
			if response.StatusCode != 202 {
				reloadFailure = fmt.Sprintf("%d %s", response.StatusCode, body)
				ackCh <- -1
				return
			}
			ackCh <- time.Since(sent)
		}()
		c.Run(sent.Add(60*time.Second), func() bool { return c.Reached+c.Lost >= count })
		cpuTicks := s.CPUTicks() - cpuBefore
		r := roundResult{calls: up.Calls.Load() - callsBefore, cpuMS: cpuTicks * 10,
			otherMS: (harness.MachineBusyTicks() - machineBefore - cpuTicks) * 10}
		r.ack = <-ackCh
		if r.ack < 0 {
			return result, fmt.Errorf("POST /%s/reload failed: %s", m.resource, reloadFailure)
		}
		var latencies []time.Duration
		for _, sub := range c.Subs {
			if sub.State != harness.StClosed && sub.Version == version {
				latencies = append(latencies, sub.Arrived.Sub(sent))
			} else {
				r.missed++
			}
		}
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		if len(latencies) > 0 {
			r.p50 = harness.Percentile(latencies, 50)
			r.p99 = harness.Percentile(latencies, 99)
			r.max = latencies[len(latencies)-1]
		}
		result.rounds = append(result.rounds, r)
		c.Run(time.Now().Add(time.Second), func() bool { return false })
	}
	result.rssAfterUpdates = s.RSSKiB()
	result.lost, result.errors = c.Lost, c.Errors
	if !s.Alive() {
		return result, fmt.Errorf("tributary exited during the run: %v", s.ExitErr())
	}
	return result, nil
}

func firstFailure(c *harness.SSEClients) string {
	for _, s := range c.Subs {
		if s != nil && s.CloseWhy != "" {
			return s.CloseWhy
		}
	}
	for _, s := range c.Subs {
		if s != nil && s.LastError != "" {
			return "error event " + s.LastError
		}
	}
	return ""
}

func printRun(label string, r runResult, m mode) {
	fmt.Printf("%s: RSS %d KiB before, %d KiB with %d streams (%.0f B per key), %d KiB after the updates (%.0f B per key); live pipelines gauge %s; connected in %.1f s; %d lost, %d error events\n",
		label, r.rssBefore, r.rssAfter, m.streams(), r.delta()/float64(r.keys), r.rssAfterUpdates, r.deltaUpdated()/float64(r.keys),
		r.pipelines, r.connectTime.Seconds(), r.lost, r.errors)
	fmt.Println("| update | p50 ms | p99 ms | max ms | reload answered ms | missed | upstream calls | service CPU ms | other CPU ms |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, round := range r.rounds {
		fmt.Printf("| %d | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d |\n", i+1, harness.Milliseconds(round.p50), harness.Milliseconds(round.p99),
			harness.Milliseconds(round.max), harness.Milliseconds(round.ack), round.missed, round.calls, round.cpuMS, round.otherMS)
	}
}

// figures are the medians of a mode's runs: RSS deltas (B) and, over every update, p50, p99,
// max (ms), upstream calls and service CPU (ms); missed counts every update's misses.
type figures struct {
	delta, deltaUpdated, p50, p99, max, calls, cpu float64
	missed                                         int
}

func summarize(results []runResult) figures {
	var f figures
	var delta, deltaUpdated, p50, p99, max, calls, cpu []float64
	for _, r := range results {
		delta = append(delta, r.delta())
		deltaUpdated = append(deltaUpdated, r.deltaUpdated())
		for _, round := range r.rounds {
			p50 = append(p50, harness.Milliseconds(round.p50))
			p99 = append(p99, harness.Milliseconds(round.p99))
			max = append(max, harness.Milliseconds(round.max))
			calls = append(calls, float64(round.calls))
			cpu = append(cpu, float64(round.cpuMS))
			f.missed += round.missed
		}
	}
	f.delta, f.deltaUpdated, f.p50, f.p99, f.max = harness.Median(delta), harness.Median(deltaUpdated), harness.Median(p50), harness.Median(p99), harness.Median(max)
	f.calls, f.cpu = harness.Median(calls), harness.Median(cpu)
	return f
}

func printSummary(m mode, keyed, single []runResult, groups int) {
	k := summarize(keyed)
	fmt.Printf("\nsummary, %s: %d keys x %d streams of /%s (%d streams), %d groups per list; medians over %d run(s)\n",
		m.name, m.keys, m.perKey, m.resource, m.streams(), groups, len(keyed))
	fmt.Println("| measure | keyed | one key, same streams |")
	fmt.Println("|---|---:|---:|")
	s := figures{}
	if len(single) > 0 {
		s = summarize(single)
	}
	col := func(value float64, format string) string {
		if len(single) == 0 {
			return ""
		}
		return fmt.Sprintf(format, value)
	}
	keys := float64(m.keys)
	fmt.Printf("| RSS per live pipeline, its %d streams included: (after - before) / %d | %.0f B | |\n", m.perKey, m.keys, k.delta/keys)
	fmt.Printf("| the same after the updates | %.0f B | |\n", k.deltaUpdated/keys)
	fmt.Printf("| RSS per stream: (after - before) / %d | %.0f B | %s |\n", m.streams(), k.delta/float64(m.streams()), col(s.delta/float64(m.streams()), "%.0f B"))
	if len(single) > 0 {
		fmt.Printf("| RSS per pipeline beyond its streams: (keyed - one key) / %d | %.0f B | |\n", m.keys-1, (k.delta-s.delta)/(keys-1))
		fmt.Printf("| the same after the updates | %.0f B | |\n", (k.deltaUpdated-s.deltaUpdated)/(keys-1))
	}
	fmt.Printf("| update: p50 | %.1f ms | %s |\n", k.p50, col(s.p50, "%.1f ms"))
	fmt.Printf("| update: p99 | %.1f ms | %s |\n", k.p99, col(s.p99, "%.1f ms"))
	fmt.Printf("| update: max (all reached) | %.1f ms | %s |\n", k.max, col(s.max, "%.1f ms"))
	fmt.Printf("| upstream calls per update | %.0f | %s |\n", k.calls, col(s.calls, "%.0f"))
	fmt.Printf("| service CPU per update | %.0f ms | %s |\n", k.cpu, col(s.cpu, "%.0f ms"))
	fmt.Printf("| streams missing an update (all updates) | %d | %s |\n", k.missed, col(float64(s.missed), "%.0f"))
}
