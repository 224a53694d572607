// Command revalidation measures `upstreams.NAME.revalidate` on against off, side by side in
// one run: two services of the same build and configuration but for `revalidate: true|false`,
// against the same static nginx fixture (harness/static.go, ../shared/bench's tree), each kept
// live by its own event-stream subscribers and refreshed by `POST /{resource}/reload`
// (`refreshInterval: 1h`, so only the reloads refresh). Benchmarks/revalidation.sh and
// Benchmarks/revalidation-count.sh run it; their headers say what each figure is.
//
// Scenarios (-scenarios, a comma-separated subset):
//
//  1. nothing changes: /groups, -items items with per-item details, one subscriber per
//     service; per round and mode -warmup refreshes, then -refreshes measured; -rounds rounds,
//     the order of the modes swapped every other round, medians of the rounds. Per refresh:
//     upstream calls and 304s (/metrics), upstream bytes (the TCP payload the service received
//     on its connections to nginx, `bytes_received` of `ss -tinp`), of it headers (nginx's
//     header sizes of a 200 and a 304 × calls) and bodies, the service's CPU (utime+stime and
//     schedstat) less what the /metrics polls that wait for each refresh cost (measured at
//     idle before the rounds), and the events the subscriber received (goal 0).
//  2. one detail changes per refresh: a `?updates=patch` subscriber; before each of -changes
//     refreshes one item's metadata.json is replaced (a new taskCount, a new mtime, so
//     nginx's ETag changes; nginx's open_file_cache off). Checked: one `patch` event per
//     refresh, every operation under that item's index, setting its new taskCount.
//  3. quota: -identities identities of /me/groups (an upstream forwarding Authorization) over a
//     -quota-items list: upstream calls and 304s per refresh of all of them (-quota-rounds after
//     one warm-up), and what a 5,000/h quota counting 304s free would count in an hour at a
//     30 s refresh interval (an extrapolation: counted calls per round × 120).
//
// And `count`: one service at a time (on, then off), one worker under callgrind, one
// subscriber, -refreshes reloads one every -wait after 3 warm-ups: instructions and
// allocations per refresh (Benchmarks/callgrind_counts.py, -counts).
//
// A refresh is over when the attempts counter has grown by the calls it makes (polled on
// /metrics: first after 0.8 × the median time of the refreshes before, then every 2 ms; every
// wait bounded by -refresh-timeout), and in scenario 2 when the subscriber has the event. Exit
// status 1 when a run fails (a wait that times out, a wrong event, no 304), not when a goal is
// missed.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

type options struct {
	bin                                 string
	rounds, warmup, refreshes, items    int
	changes, identities, quotaItems     int
	quotaRounds, pad, quietMax          int
	timeout, quietWait, wait            time.Duration
	workers, perfDir, counts, scenarios string
}

// service is one of the two services of a scenario.
type service struct {
	mode string // "on" or "off"
	*harness.Service
	upstreamPort int
}

var work *harness.Workspace

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "the tributary binary (required)")
	flag.IntVar(&o.rounds, "rounds", harness.EnvInt("ROUNDS", 3), "scenario 1's rounds (env ROUNDS)")
	flag.IntVar(&o.warmup, "warmup", harness.EnvInt("WARMUP", 3), "unmeasured refreshes before each measured run (env WARMUP)")
	flag.IntVar(&o.refreshes, "refreshes", harness.EnvInt("REFRESHES", 50), "measured refreshes per round and mode (count: in all) (env REFRESHES)")
	flag.IntVar(&o.items, "items", harness.EnvInt("ITEMS", 200), "items of scenarios 1, 2 and count (env ITEMS)")
	flag.IntVar(&o.changes, "changes", harness.EnvInt("CHANGES", 20), "scenario 2's refreshes, each after one change (env CHANGES)")
	flag.IntVar(&o.identities, "identities", harness.EnvInt("IDENTITIES", 100), "scenario 3's live identities (env IDENTITIES)")
	flag.IntVar(&o.quotaItems, "quota-items", harness.EnvInt("QUOTA_ITEMS", 50), "scenario 3's items (env QUOTA_ITEMS)")
	flag.IntVar(&o.quotaRounds, "quota-rounds", harness.EnvInt("QUOTA_ROUNDS", 5), "scenario 3's measured refreshes (env QUOTA_ROUNDS)")
	flag.IntVar(&o.pad, "pad", harness.EnvInt("PAD", 0), "scenario 1: a `notes` member of this many bytes in every metadata.json (env PAD)")
	flag.DurationVar(&o.timeout, "refresh-timeout", time.Duration(harness.EnvInt("REFRESH_TIMEOUT", 30))*time.Second, "the bound of every wait (env REFRESH_TIMEOUT, in seconds)")
	flag.StringVar(&o.workers, "workers", harness.EnvString("WORKERS", "auto"), "the services' workers (env WORKERS)")
	flag.StringVar(&o.scenarios, "scenarios", harness.EnvString("SCENARIOS", "1,2,3"), "the scenarios to run: 1, 2, 3, count (env SCENARIOS)")
	flag.IntVar(&o.quietMax, "quiet-max", harness.EnvInt("QUIET_MAX", 15), "before scenario 1's rounds, wait until the machine is at most this % busy (env QUIET_MAX)")
	flag.DurationVar(&o.quietWait, "quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 300))*time.Second, "… at most this long (env QUIET_WAIT, in seconds)")
	flag.StringVar(&o.perfDir, "perf-dir", os.Getenv("PERF_DIR"), "scenario 1: one more run per mode under perf record -g, its profiles here (env PERF_DIR)")
	flag.DurationVar(&o.wait, "wait", harness.EnvDuration("WAIT", 1500*time.Millisecond), "count: the time between two reloads (env WAIT)")
	flag.StringVar(&o.counts, "counts", "", "count: Benchmarks/callgrind_counts.py")
	keep := flag.Bool("keep", os.Getenv("KEEP_WORK") == "1", "keep the work directory (env KEEP_WORK=1)")
	flag.Parse()
	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "usage: revalidation -bin PATH [-scenarios 1,2,3|count] [-rounds N] [-refreshes N] … (see -help)")
		os.Exit(2)
	}
	for name, value := range map[string]int{"rounds": o.rounds, "warmup": o.warmup, "refreshes": o.refreshes, "items": o.items,
		"changes": o.changes, "identities": o.identities, "quota-items": o.quotaItems, "quota-rounds": o.quotaRounds} {
		if value < 1 {
			fmt.Fprintf(os.Stderr, "-%s must be at least 1\n", name)
			os.Exit(2)
		}
	}
	var err error
	work, err = harness.NewWorkspace("revalidation", *keep)
	harness.Check(err)
	if *keep {
		fmt.Fprintf(os.Stderr, "work directory kept: %s\n", work.Dir)
	}
	has := func(s string) bool { return strings.Contains(","+o.scenarios+",", ","+s+",") }
	if has("count") {
		if o.counts == "" {
			work.Check(fmt.Errorf("count needs -counts Benchmarks/callgrind_counts.py"))
		}
		count(o)
		work.Close()
		return
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("# revalidation: %s, workers %s, %d cores, load %s, %s\n", o.bin, o.workers, runtime.NumCPU(),
		strings.Join(strings.Fields(string(load))[:3], " "), time.Now().UTC().Format("2006-01-02T15:04:05Z"))
	r := &report{o: o}
	if has("1") {
		r.nothing = scenarioNothing(o, r)
	}
	if has("2") {
		r.one = scenarioOne(o)
	}
	if has("3") {
		r.quota = scenarioQuota(o)
	}
	failed := r.print()
	work.Close()
	if failed {
		os.Exit(1)
	}
}

// setUp writes a scenario's fixture of `items` items (edit, when set, changes it first), serves
// it and starts both services against it.
func setUp(o options, scenario, items int, static harness.StaticOptions, edit func(*harness.StaticFixture)) (*harness.StaticFixture, *harness.Nginx, map[string]*service) {
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, fmt.Sprintf("fx%d", scenario)), items)
	work.Check(err)
	if edit != nil {
		edit(fx)
	}
	nginx, err := work.StartStaticUpstream(fmt.Sprintf("nginx%d", scenario), fx, static)
	work.Check(err)
	return fx, nginx, startServices(o, scenario, fmt.Sprintf("http://127.0.0.1:%d", nginx.Port))
}

// startServices writes both configurations for the upstream at url and starts the services.
func startServices(o options, scenario int, url string) map[string]*service {
	services := map[string]*service{}
	for _, mode := range []string{"on", "off"} {
		config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "revalidation", File: mode + ".yaml", UpstreamURL: url,
			Workers: o.workers, MaxClientShare: 100, PoolSize: 128, Accounts: true, Revalidate: map[string]string{"on": "true", "off": "false"}[mode],
			RefreshInterval: "1h", NoCoalescing: true, Lists: []harness.List{
				{Name: "mygroups", Upstream: "accounts", Route: "/me/groups", List: "/groups", Details: "/groups/{id}/metadata"}}})
		work.Check(err)
		s, err := work.StartServiceWith(harness.ServiceOptions{Bin: o.bin, ConfigPath: config}, fmt.Sprintf("%s-s%d.log", mode, scenario))
		work.Check(err)
		services[mode] = &service{mode: mode, Service: s, upstreamPort: harness.PortOfURL(url)}
	}
	return services
}

func stopServices(services map[string]*service) {
	for _, s := range services {
		s.Stop()
	}
}

// subscribe opens an event stream of the service (an identity's with auth).
func subscribe(s *service, path, auth string) *harness.Stream {
	var headers []string
	if auth != "" {
		headers = append(headers, "Authorization: Bearer "+auth)
	}
	stream, err := harness.Subscribe("http://"+s.Addr+path, headers...)
	work.Check(err)
	work.OnClose(stream.Close)
	return stream
}

// --- /metrics ----------------------------------------------------------------------------------

type metrics struct {
	attempts, notModified, errors, subscribers, pipelines float64
	lines                                                 []string
}

// readMetrics reads the upstream's counters and the resource's gauges from /metrics.
func readMetrics(conn *harness.Conn, upstream, resource string) metrics {
	status, body, err := conn.Do("GET", "/metrics")
	work.Check(err)
	if status != 200 {
		work.Check(fmt.Errorf("GET /metrics answered %d", status))
	}
	var m metrics
	up, res := `upstream="`+upstream+`"`, `resource="`+resource+`"`
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		space := strings.LastIndexByte(line, ' ')
		if space < 0 {
			continue
		}
		name := line[:space]
		value, _ := strconv.ParseFloat(line[space+1:], 64)
		if strings.Contains(name, up) {
			switch {
			case strings.HasPrefix(name, "tributary_upstream_request_duration_seconds_count{"):
				m.attempts += value
			case strings.HasPrefix(name, "tributary_upstream_not_modified_total{"):
				m.notModified += value
			case strings.HasPrefix(name, "tributary_upstream_errors_total{"):
				m.errors += value
			}
			if strings.Contains(line, "_count{") || strings.Contains(line, "not_modified") || strings.Contains(line, "errors") {
				m.lines = append(m.lines, line)
			}
		}
		if strings.Contains(name, res) {
			switch {
			case strings.HasPrefix(name, "tributary_sse_subscribers{"):
				m.subscribers += value
			case strings.HasPrefix(name, "tributary_live_pipelines{"):
				m.pipelines += value
			}
		}
	}
	return m
}

// waitFor calls predicate every 2 ms until it holds, at most `limit`.
func waitFor(limit time.Duration, what string, predicate func() bool) {
	deadline := time.Now().Add(limit)
	for !predicate() {
		if time.Now().After(deadline) {
			work.Check(fmt.Errorf("timed out after %s waiting for %s", limit, what))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ready waits until the service has `pipelines` live pipelines of resource, `attempts`
// upstream calls, and each stream its first event.
func ready(s *service, upstream, resource string, pipelines, attempts int, limit time.Duration, streams ...*harness.Stream) {
	conn, err := harness.Dial(s.Addr)
	work.Check(err)
	defer conn.Close()
	waitFor(limit, fmt.Sprintf("%d live pipelines and %d upstream calls", pipelines, attempts), func() bool {
		m := readMetrics(conn, upstream, resource)
		return m.pipelines >= float64(pipelines) && m.attempts >= float64(attempts)
	})
	for _, stream := range streams {
		waitFor(limit, "the first event", func() bool { return stream.Count() > 0 })
	}
}

// --- what the service used -------------------------------------------------------------------

type sample struct {
	user, system int // ticks
	ns, rchar    int64
	tcp          map[string][2]int64 // by local address: bytes received, bytes sent
	t            time.Time
}

var ssLocal = regexp.MustCompile(`^[\d.\[\]:a-f]+:\d+$`)
var ssReceived = regexp.MustCompile(`bytes_received:(\d+)`)
var ssSent = regexp.MustCompile(`bytes_sent:(\d+)`)

// tcpBytes is (bytes_received, bytes_sent) of each of the service's TCP connections to the
// upstream's port, by local address, from `ss -tinp` (/proc/PID/io's rchar does not count
// recv() on sockets, which is how the upstream client reads).
func tcpBytes(pid, upstreamPort int) map[string][2]int64 {
	out, err := exec.Command("ss", "-tinpH", fmt.Sprintf("( dport = :%d )", upstreamPort)).Output()
	work.Check(err)
	result, current := map[string][2]int64{}, ""
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			current = ""
			if strings.Contains(line, fmt.Sprintf("pid=%d,", pid)) {
				for _, field := range strings.Fields(line) {
					if ssLocal.MatchString(field) {
						current = field
						break
					}
				}
			}
		} else if current != "" {
			if m := ssReceived.FindStringSubmatch(line); m != nil {
				received, _ := strconv.ParseInt(m[1], 10, 64)
				var sent int64
				if m := ssSent.FindStringSubmatch(line); m != nil {
					sent, _ = strconv.ParseInt(m[1], 10, 64)
				}
				result[current] = [2]int64{received, sent}
			}
		}
	}
	return result
}

func take(s *service) sample {
	user, system := harness.ProcessCPU(s.PID)
	return sample{user: user, system: system, ns: s.SchedNanoseconds(), rchar: s.ReadChars(), tcp: tcpBytes(s.PID, s.upstreamPort), t: time.Now()}
}

// used is what the service used between two samples.
type used struct {
	cpuMs, userMs, kernelMs, schedMs float64
	rchar, tcp, tcpSent              int64
	closed, opened                   int
	wall                             time.Duration
}

func between(a, b sample) used {
	var u used
	for local, bytes := range b.tcp {
		u.tcp += bytes[0] - a.tcp[local][0]
		u.tcpSent += bytes[1] - a.tcp[local][1]
		if _, ok := a.tcp[local]; !ok {
			u.opened++
		}
	}
	for local := range a.tcp {
		if _, ok := b.tcp[local]; !ok {
			u.closed++
		}
	}
	u.userMs, u.kernelMs = float64(b.user-a.user)*10, float64(b.system-a.system)*10
	u.cpuMs = u.userMs + u.kernelMs
	u.schedMs = float64(b.ns-a.ns) / 1e6
	u.rchar = b.rchar - a.rchar
	u.wall = b.t.Sub(a.t)
	return u
}

// pollCost is what one GET /metrics costs the service, at idle.
type pollCost struct {
	cpuMs, schedMs, rchar, sent float64
}

func measurePolls(s *service, count int) pollCost {
	conn, err := harness.Dial(s.Addr)
	work.Check(err)
	defer conn.Close()
	readMetrics(conn, "tasks", "groups")
	sent0 := conn.Sent
	a := take(s)
	for i := 0; i < count; i++ {
		readMetrics(conn, "tasks", "groups")
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	u := between(a, take(s))
	n := float64(count)
	return pollCost{cpuMs: u.cpuMs / n, schedMs: u.schedMs / n, rchar: float64(u.rchar) / n, sent: float64(conn.Sent-sent0) / n}
}

// --- refreshes -------------------------------------------------------------------------------

// mutation replaces one item's details before each refresh (scenario 2).
type mutation struct {
	fixture *harness.StaticFixture
	start   int
	epoch   int64
}

type change struct{ index, value int }

// run is what `count` refreshes of one service did.
type run struct {
	used
	count                      int
	calls, notModified, errors float64
	polls, sent                int
	durationMs, pipelines      float64
	events                     int
	perRefreshEvents           []int
	problems                   []string
	lastMetrics                []string
}

// refresh reloads `resource` `count` times, each waited for (its `calls` upstream calls
// counted, and with a mutation its event); the stream's events are counted when there is one.
func refresh(o options, s *service, upstream, resource string, calls, count int, stream *harness.Stream, mutate *mutation) run {
	conn, err := harness.Dial(s.Addr)
	work.Check(err)
	defer conn.Close()
	before := 0
	if stream != nil {
		before = stream.Count()
	}
	m := readMetrics(conn, upstream, resource)
	first := m
	var durations []float64
	var changes []change
	r := run{count: count}
	sent0 := conn.Sent
	a := take(s)
	for i := 0; i < count; i++ {
		if mutate != nil {
			ids := mutate.fixture.IDs
			index := (mutate.start + i*7) % len(ids)
			value := 1000 + mutate.start + i
			replace(filepath.Join(mutate.fixture.Dir, "groups", ids[index], "metadata.json"), value, mutate.epoch+int64(mutate.start+i))
			changes = append(changes, change{index, value})
		}
		seen := 0
		if stream != nil {
			seen = stream.Count()
		}
		target := m.attempts + float64(calls)
		t0 := time.Now()
		status, body, err := conn.Do("POST", "/"+resource+"/reload", "Content-Length: 0")
		work.Check(err)
		if status/100 != 2 {
			work.Check(fmt.Errorf("POST /%s/reload answered %d: %.200s", resource, status, body))
		}
		if len(durations) > 0 {
			time.Sleep(time.Duration(0.8 * harness.Median(durations) * float64(time.Second)))
		}
		deadline := t0.Add(o.timeout)
		for {
			m = readMetrics(conn, upstream, resource)
			r.polls++
			if m.attempts >= target {
				break
			}
			if time.Now().After(deadline) {
				work.Check(fmt.Errorf("refresh %d: timed out after %s with %.0f of %d upstream calls; metrics: %v",
					i+1, o.timeout, m.attempts-target+float64(calls), calls, m.lines))
			}
			time.Sleep(2 * time.Millisecond)
		}
		if mutate != nil {
			waitFor(o.timeout, fmt.Sprintf("the event of refresh %d", i+1), func() bool { return stream.Count() > seen })
		}
		durations = append(durations, time.Since(t0).Seconds())
		if stream != nil {
			r.perRefreshEvents = append(r.perRefreshEvents, stream.Count()-seen)
		}
	}
	time.Sleep(20 * time.Millisecond) // the end of the last refresh's merge (no event when nothing changed)
	r.used = between(a, take(s))
	r.calls, r.notModified, r.errors = m.attempts-first.attempts, m.notModified-first.notModified, m.errors-first.errors
	r.sent = conn.Sent - sent0
	r.durationMs = harness.Median(durations) * 1000
	r.pipelines = m.pipelines
	r.lastMetrics = m.lines
	if stream != nil {
		time.Sleep(50 * time.Millisecond)
		got := stream.Events()[before:]
		r.events = len(got)
		if mutate != nil {
			r.problems = checkPatches(changes, got, count)
		}
	}
	return r
}

// replace writes item details with taskCount value to a new file, dated mtime, and renames it
// over path: nginx's ETag (mtime-size) changes.
func replace(path string, value int, mtime int64) {
	tmp := path + ".tmp"
	work.Check(os.WriteFile(tmp, []byte(harness.StaticMetadata(value, "2026-11-28T00:00:00Z")), 0o644))
	when := time.Unix(mtime, 0)
	work.Check(os.Chtimes(tmp, when, when))
	work.Check(os.Chmod(tmp, 0o644))
	work.Check(os.Rename(tmp, path))
}

// checkPatches says what is wrong with the events of the refreshes after `changes`: each must
// be one patch, every operation under the changed item's index, one setting its taskCount.
func checkPatches(changes []change, got []harness.Event, count int) []string {
	var problems []string
	if len(got) != count {
		problems = append(problems, fmt.Sprintf("%d events for %d refreshes", len(got), count))
	}
	for n := 0; n < len(changes) && n < len(got); n++ {
		c, event := changes[n], got[n]
		if event.Name != "patch" {
			problems = append(problems, fmt.Sprintf("refresh %d: event %s, not patch", n+1, event.Name))
			continue
		}
		ops, err := parseOps(event.Data)
		if err != nil {
			problems = append(problems, fmt.Sprintf("refresh %d: %v: %.200s", n+1, err, event.Data))
			continue
		}
		prefix, sets := fmt.Sprintf("/%d/", c.index), false
		for _, op := range ops {
			if !strings.HasPrefix(op.Path, prefix) {
				problems = append(problems, fmt.Sprintf("refresh %d: a patch of more than item %d: %.200s", n+1, c.index, event.Data))
				break
			}
		}
		for _, op := range ops {
			if op.Path == fmt.Sprintf("/%d/taskCount", c.index) && string(op.Value) == strconv.Itoa(c.value) {
				sets = true
			}
		}
		if !sets {
			problems = append(problems, fmt.Sprintf("refresh %d: no taskCount %d for item %d: %.200s", n+1, c.value, c.index, event.Data))
		}
	}
	return problems
}

// --- scenarios -------------------------------------------------------------------------------

// fixtureFacts are nginx's header sizes and the bodies of one refresh (scenario 1).
type fixtureFacts struct {
	h200, h304             int
	etag                   string
	listBytes, detailBytes int64
}

func scenarioNothing(o options, r *report) map[string][]run {
	// Larger details, as real APIs answer: a member of PAD bytes in each metadata.json.
	pad := func(fx *harness.StaticFixture) {
		for _, id := range fx.IDs {
			path := filepath.Join(fx.Dir, "groups", id, "metadata.json")
			data, err := os.ReadFile(path)
			work.Check(err)
			padded := strings.TrimSuffix(string(data), "}}") + `,"notes":"` + strings.Repeat("x", o.pad) + `"}}`
			work.Check(os.WriteFile(path, []byte(padded), 0o644))
		}
	}
	if o.pad == 0 {
		pad = nil
	}
	fx, nginx, services := setUp(o, 1, o.items, harness.StaticOptions{}, pad)
	facts := fixtureFacts{}
	var err error
	facts.h200, facts.h304, facts.etag, err = headerSizes(nginx.Port, "/groups/"+fx.IDs[0]+"/metadata")
	work.Check(err)
	facts.listBytes = fileSize(filepath.Join(fx.Dir, "groups.json"))
	for _, id := range fx.IDs {
		facts.detailBytes += fileSize(filepath.Join(fx.Dir, "groups", id, "metadata.json"))
	}
	r.fixture = &facts
	fmt.Printf("# 1. nginx: 200 headers %d B, 304 headers %d B (If-None-Match: %s answered 304); bodies per refresh: list %d B + details %d B\n",
		facts.h200, facts.h304, facts.etag, facts.listBytes, facts.detailBytes)
	harness.WaitQuiet(o.quietMax, o.quietWait)
	calls := o.items + 1
	streams := map[string]*harness.Stream{}
	r.polls = map[string]pollCost{}
	for _, mode := range []string{"on", "off"} {
		streams[mode] = subscribe(services[mode], "/groups", "")
		ready(services[mode], "tasks", "groups", 1, calls, o.timeout, streams[mode])
		// What the /metrics polls that wait for each refresh cost, subtracted in the report.
		r.polls[mode] = measurePolls(services[mode], 200)
	}
	runs := map[string][]run{}
	for round := 1; round <= o.rounds; round++ {
		order := []string{"on", "off"}
		if round%2 == 0 {
			order = []string{"off", "on"}
		}
		for _, mode := range order {
			refresh(o, services[mode], "tasks", "groups", calls, o.warmup, nil, nil)
			measured := refresh(o, services[mode], "tasks", "groups", calls, o.refreshes, streams[mode], nil)
			runs[mode] = append(runs[mode], measured)
			fmt.Printf("# 1. round %d %s: %s\n", round, mode, summary(measured))
		}
	}
	if o.perfDir != "" {
		profile(o, services, calls)
	}
	stopServices(services)
	nginx.Stop()
	return runs
}

func scenarioOne(o options) map[string]run {
	fx, nginx, services := setUp(o, 2, o.items, harness.StaticOptions{NoOpenFileCache: true}, nil)
	calls := o.items + 1
	epoch := time.Now().Unix() + 1000
	streams := map[string]*harness.Stream{}
	for _, mode := range []string{"on", "off"} {
		streams[mode] = subscribe(services[mode], "/groups?updates=patch", "")
		ready(services[mode], "tasks", "groups", 1, calls, o.timeout, streams[mode])
	}
	runs, start := map[string]run{}, 0
	for _, mode := range []string{"on", "off"} {
		// The warm-up takes in what changed while the other mode ran (one event), then nothing.
		refresh(o, services[mode], "tasks", "groups", calls, o.warmup, nil, nil)
		runs[mode] = refresh(o, services[mode], "tasks", "groups", calls, o.changes, streams[mode], &mutation{fixture: fx, start: start, epoch: epoch})
		start += o.changes
	}
	stopServices(services)
	nginx.Stop()
	return runs
}

func scenarioQuota(o options) map[string]run {
	_, nginx, services := setUp(o, 3, o.quotaItems, harness.StaticOptions{}, nil)
	calls := o.identities * (o.quotaItems + 1)
	for _, mode := range []string{"on", "off"} {
		for i := 1; i <= o.identities; i++ {
			subscribe(services[mode], "/me/groups", fmt.Sprintf("user-%d", i))
		}
	}
	runs := map[string]run{}
	for _, mode := range []string{"on", "off"} {
		ready(services[mode], "accounts", "mygroups", o.identities, calls, 2*o.timeout)
		refresh(o, services[mode], "accounts", "mygroups", calls, 1, nil, nil)
		runs[mode] = refresh(o, services[mode], "accounts", "mygroups", calls, o.quotaRounds, nil, nil)
	}
	stopServices(services)
	nginx.Stop()
	return runs
}

// profile runs -refreshes more refreshes per mode under `perf record -g`, not counted: where
// the CPU goes.
func profile(o options, services map[string]*service, calls int) {
	work.Check(os.MkdirAll(o.perfDir, 0o755))
	for _, mode := range []string{"on", "off"} {
		data := filepath.Join(o.perfDir, "perf-"+mode+".data")
		log, err := os.Create(filepath.Join(o.perfDir, "perf-"+mode+".log"))
		work.Check(err)
		perf := exec.Command("perf", "record", "-q", "-F", "1999", "-g", "-p", strconv.Itoa(services[mode].PID), "-o", data)
		perf.Stdout, perf.Stderr = log, log
		perf.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
		work.Check(perf.Start())
		time.Sleep(500 * time.Millisecond)
		refresh(o, services[mode], "tasks", "groups", calls, o.refreshes, nil, nil)
		perf.Process.Signal(syscall.SIGINT)
		perf.Wait()
		log.Close()
		out, _ := exec.Command("perf", "report", "-q", "-i", data, "--no-children", "--sort", "dso,symbol", "--stdio").Output()
		var top []string
		for _, line := range strings.Split(string(out), "\n") {
			if line != "" && len(top) < 60 {
				top = append(top, line)
			}
		}
		work.Check(os.WriteFile(filepath.Join(o.perfDir, "perf-"+mode+".txt"), []byte(strings.Join(top, "\n")+"\n"), 0o644))
	}
	fmt.Printf("# 1. profiles: %[1]s/perf-{on,off}.data, top symbols in %[1]s/perf-{on,off}.txt\n", o.perfDir)
}

// count runs each mode's service under callgrind and prints its instructions and allocations
// per refresh.
func count(o options) {
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, "fx"), o.items)
	work.Check(err)
	nginx, err := work.StartStaticUpstream("nginx", fx, harness.StaticOptions{})
	work.Check(err)
	url := fmt.Sprintf("http://127.0.0.1:%d", nginx.Port)
	fmt.Printf("# %d items with details, nothing changed, one worker under callgrind\n", o.items)
	reload := func(s *harness.Callgrind) {
		conn, err := harness.Dial(s.Addr)
		work.Check(err)
		status, _, err := conn.Do("POST", "/groups/reload", "Content-Length: 0")
		conn.Close()
		work.Check(err)
		if status/100 != 2 {
			work.Check(fmt.Errorf("POST /groups/reload answered %d", status))
		}
		time.Sleep(o.wait)
	}
	for _, mode := range []string{"on", "off"} {
		config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "revalidation", File: mode + ".yaml", UpstreamURL: url,
			PoolSize: 128, Revalidate: map[string]string{"on": "true", "off": "false"}[mode], RefreshInterval: "1h", NoCoalescing: true})
		work.Check(err)
		s, err := work.StartCallgrind(harness.ServiceOptions{Bin: o.bin, ConfigPath: config, Workers: 1}, mode+".log",
			filepath.Join(work.Dir, mode+".out"), o.counts)
		work.Check(err)
		stream, err := harness.Subscribe("http://" + s.Addr + "/groups")
		work.Check(err)
		time.Sleep(3 * time.Second)
		for i := 0; i < 3; i++ {
			reload(s)
		}
		work.Check(s.Zero())
		for i := 0; i < o.refreshes; i++ {
			reload(s)
		}
		_, instructions, allocations, err := s.Dump()
		work.Check(err)
		fmt.Printf("revalidate %s: %.0f instructions, %.1f allocations per refresh (%d refreshes)\n", mode,
			float64(instructions)/float64(o.refreshes), float64(allocations)/float64(o.refreshes), o.refreshes)
		stream.Close()
		s.Stop()
	}
	nginx.Stop()
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	work.Check(err)
	return info.Size()
}
