// attack: GET /groups throughput (wrk) with and without attacks running at the same time,
// against the release service with its shipped configuration and the static nginx fixture of
// the harness (../shared/bench's tree) as its `tasks` upstream, which the tool starts
// (fixture.go).
//
// Per round, on a fresh service started with a low open-file limit (prlimit, soft = hard):
// warm-up, idle RSS, then wrk alone (baseline), then the same wrk with these attacks at once
// (each a bounded number of connections for a bounded time, raw bytes over loopback):
//
//	flood      event streams of /groups that, after the stream's first bytes, write bytes into
//	           the connection as fast as the socket takes them (within -flood-rate)
//	chunks     chunked POSTs whose chunk-size line never ends: '0' bytes forever
//	slowloris  Debian's slowhttptest -H: request heads that get one more short header line
//	           per -slowloris-interval, never finished
//	fds        a burst of silent connections beyond the service's open-file limit, held
//
// and the part-3 attacks (part3.go), which run with a derived configuration (part3config.go:
// the shipped one plus auth.jwt, trusted proxies, an address rate limit and three resources),
// baseline included, so the ratio compares like with like:
//
//	tokens     JWTs whose exp/nbf/iat are 0, -1, 2^53, 2^63, 2^64, 1e308, 1e999, strings, null
//	params     dot segments, encoded bytes, Unicode look-alikes, 1,024/1,025-byte parameter values
//	forwarded  forwarded Authorization values at server.maxHeaderBytes, each a new identity
//	xff        200,000 distinct X-Forwarded-For clients from the trusted loopback peer
//
// The service's RSS and each of its threads' CPU time are read every 100 ms throughout;
// after the attacks stop, the time until every thread is idle again. Goals (the hardening
// issue's): no crash; RSS ≤ idle + 64 MiB throughout; throughput under attack ≥ 80% of the
// baseline; every thread idle within 2 s of the attacks' end. Then two checks on fresh
// services: a HEAD then a GET on one keep-alive connection (no desync), and an upstream URL
// on port 0 (no crash). Exit status 0 only if every goal and check passed.
//
//	attack -bin PATH -config config/tributary.yaml [-groups 10] [-rounds 3]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"tributary/benchmarks/load/harness"
)

type options struct {
	bin, config, upstream, expected string
	rounds                          int
	fdLimit                         int
	wrkThreads, wrkConnections      int
	wrkDuration, attackDelay        time.Duration
	warmup                          time.Duration
	attacks                         map[string]bool
	flood, chunks, slowloris, fds   attackSpec
	tokens, params, forwarded, xff  attackSpec
	part3                           bool     // a part-3 attack runs: the derived configuration
	serviceConfig                   string   // the configuration the rounds' services run with
	serviceEnv                      []string // and their environment (the JWT key)
	jwtSecret                       []byte
	tokensNested                    bool
	maxHeaderBytes                  int
	idlePercent                     float64
	idleWindow, idleHold            time.Duration
	recoveryGoal, recoveryMax       time.Duration
	rssGoalMiB                      int
	throughputGoal                  float64
	checks                          bool
	upstreamPID                     int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("attack: ")
	var o options
	flag.StringVar(&o.bin, "bin", "", "the tributary binary (required)")
	flag.StringVar(&o.config, "config", "config/tributary.yaml", "the service's configuration (the shipped one)")
	groups := flag.Int("groups", 10, "groups in the fixture the tool serves (fixture.go)")
	flag.StringVar(&o.upstream, "upstream", "", "instead of the tool's fixture, an upstream already running: http://127.0.0.1:PORT")
	flag.IntVar(&o.upstreamPID, "upstream-pid", 0, "with -upstream, its (nginx master's) PID: its and its children's CPU is reported")
	flag.StringVar(&o.expected, "expected", "", "with -upstream, the fixture's expected.json: GET /groups must answer exactly this")
	flag.IntVar(&o.rounds, "rounds", 3, "baseline + attack pairs, each on a fresh service; medians are reported")
	flag.IntVar(&o.fdLimit, "fd-limit", 2048, "the service's open-file limit (soft and hard, via prlimit)")
	flag.IntVar(&o.wrkThreads, "wrk-threads", 2, "wrk -t")
	flag.IntVar(&o.wrkConnections, "wrk-connections", 64, "wrk -c")
	flag.DurationVar(&o.wrkDuration, "wrk-duration", 10*time.Second, "wrk -d (whole seconds)")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "wrk warm-up on each fresh service, before the idle RSS")
	flag.DurationVar(&o.attackDelay, "attack-delay", 500*time.Millisecond, "the attacks begin this long after wrk (whose connections are open by then)")
	only := flag.String("attacks", "flood,chunks,slowloris,fds", "the attacks to run, comma-separated (also tokens, params, forwarded, xff; all: every one)")
	flag.IntVar(&o.flood.count, "flood", 200, "flooding event streams")
	flag.DurationVar(&o.flood.duration, "flood-duration", 12*time.Second, "how long the flooding streams run")
	flag.Float64Var(&o.flood.rate, "flood-rate", 64, "MiB/s the flooding streams write in all, at most (0: as fast as the sockets take)")
	flag.IntVar(&o.chunks.count, "chunks", 200, "connections sending an endless chunk-size line")
	flag.DurationVar(&o.chunks.duration, "chunks-duration", 12*time.Second, "how long they run")
	flag.Float64Var(&o.chunks.rate, "chunks-rate", 16, "MiB/s they write in all, at most (0: as fast as the sockets take)")
	flag.IntVar(&o.slowloris.count, "slowloris", 500, "slowloris connections")
	flag.DurationVar(&o.slowloris.duration, "slowloris-duration", 12*time.Second, "how long they run")
	flag.DurationVar(&o.slowloris.interval, "slowloris-interval", 3*time.Second, "between two header lines of one slowloris connection (whole seconds: slowhttptest -i)")
	flag.IntVar(&o.fds.count, "fds", 2048, "connections of the descriptor-exhaustion burst")
	flag.DurationVar(&o.fds.duration, "fds-duration", 12*time.Second, "how long the burst's connections are held")
	part3Flags := func(spec *attackSpec, name string, conns int, perSecond float64, what string) {
		flag.IntVar(&spec.count, name, conns, name+": connections at once ("+what+")")
		flag.DurationVar(&spec.duration, name+"-duration", 12*time.Second, name+": how long it runs")
		flag.Float64Var(&spec.perSecond, name+"-rate", perSecond, name+": requests/s in all, at most (0: no cap)")
		flag.DurationVar(&spec.hold, name+"-hold", time.Second, name+": how long each event stream is held open")
		flag.IntVar(&spec.streams, name+"-streams", 64, name+": event streams open at once, at most (each a connection)")
	}
	part3Flags(&o.tokens, "tokens", 16, 400, "JWTs with extreme claims")
	flag.BoolVar(&o.tokensNested, "tokens-nested", true, "tokens: also the two tokens whose JSON ends 513 arrays deep (they crash a service built with Swift 6.3.1: README)")
	part3Flags(&o.params, "params", 16, 400, "hostile parameter values")
	part3Flags(&o.forwarded, "forwarded", 16, 200, "Authorization at server.maxHeaderBytes, forwarded")
	flag.IntVar(&o.xff.count, "xff-connections", 8, "xff: keep-alive connections")
	flag.IntVar(&o.xff.clients, "xff", 200000, "xff: distinct X-Forwarded-For clients, one request each (one in 16 repeated)")
	flag.DurationVar(&o.xff.duration, "xff-duration", 12*time.Second, "xff: how long it runs at most")
	flag.Float64Var(&o.xff.perSecond, "xff-rate", 20000, "xff: requests/s in all, at most (0: no cap)")
	flag.IntVar(&o.xff.depth, "xff-depth", 16, "xff: requests pipelined per write on one connection")
	xffMix := flag.String("xff-mix", strings.Join(xffDefaultMix, ","), "xff: the kinds of request, by turns ("+strings.Join(xffKinds, ", ")+")")
	flag.StringVar(&o.xff.target, "xff-target", "", "xff: send to this host:port instead of the service (a control: what the tool's own load costs wrk on a shared machine)")
	flag.IntVar(&o.maxHeaderBytes, "max-header-bytes", shippedMaxHeaderBytes, "forwarded: server.maxHeaderBytes of the configuration (requests are sized just under it)")
	flag.Float64Var(&o.idlePercent, "idle-percent", 5, "a thread is idle below this % of one core over -idle-window")
	flag.DurationVar(&o.idleWindow, "idle-window", 200*time.Millisecond, "the window of the idle test")
	flag.DurationVar(&o.idleHold, "idle-hold", time.Second, "recovered = idle windows for at least this long in a row")
	flag.DurationVar(&o.recoveryGoal, "recovery-goal", 2*time.Second, "goal: every thread idle within this after the attacks stop")
	flag.DurationVar(&o.recoveryMax, "recovery-max", 10*time.Second, "stop waiting for idle after this")
	flag.IntVar(&o.rssGoalMiB, "rss-goal", 64, "goal: RSS at most idle RSS + this many MiB throughout")
	flag.Float64Var(&o.throughputGoal, "throughput-goal", 80, "goal: req/s under attack at least this % of the baseline")
	flag.BoolVar(&o.checks, "checks", true, "then the HEAD/GET desync and port-0 upstream checks")
	procs := flag.Int("procs", 1, "GOMAXPROCS of this tool: at most this many cores run the attacks")
	keep := flag.Bool("keep", false, "keep the work directory (service logs)")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "before each round, wait until the machine is at most this % busy (env QUIET_MAX)")
	quietWait := flag.Duration("quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 30))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	flag.Parse()
	for _, kind := range strings.Split(*xffMix, ",") {
		if !strings.Contains(","+strings.Join(xffKinds, ",")+",", ","+kind+",") {
			log.Fatalf("unknown -xff-mix kind %q (%s)", kind, strings.Join(xffKinds, ", "))
		}
		o.xff.mix = append(o.xff.mix, kind)
	}
	if o.bin == "" || (o.upstream != "" && !strings.HasPrefix(o.upstream, "http://127.0.0.1:")) {
		fmt.Fprintln(os.Stderr, "usage: attack -bin PATH [-groups 10 | -upstream http://127.0.0.1:PORT] [-config FILE] [-rounds 3] [flags]")
		os.Exit(2)
	}
	o.attacks = map[string]bool{}
	for _, name := range strings.Split(*only, ",") {
		switch name = strings.TrimSpace(name); name {
		case "flood", "chunks", "slowloris", "fds":
			o.attacks[name] = true
		case "tokens", "params", "forwarded", "xff":
			o.attacks[name] = true
			o.part3 = true
		case "all":
			for _, each := range []string{"flood", "chunks", "slowloris", "fds", "tokens", "params", "forwarded", "xff"} {
				o.attacks[each] = true
			}
			o.part3 = true
		case "", "none":
		default:
			log.Fatalf("unknown attack %q (flood, chunks, slowloris, fds, tokens, params, forwarded, xff, all)", name)
		}
	}
	if o.slowloris.interval < time.Second || o.rounds < 1 || o.fdLimit < 0 || o.wrkDuration < time.Second {
		log.Fatal("-slowloris-interval must be ≥ 1s, -rounds ≥ 1, -fd-limit ≥ 0 (0: the inherited limit), -wrk-duration ≥ 1s")
	}
	runtime.GOMAXPROCS(*procs)
	need := 100
	for name, spec := range map[string]attackSpec{"flood": o.flood, "chunks": o.chunks, "slowloris": o.slowloris, "fds": o.fds,
		"tokens": o.tokens, "params": o.params, "forwarded": o.forwarded, "xff": o.xff} {
		if o.attacks[name] {
			need += spec.count + spec.streams
		}
	}
	harness.Check(harness.RaiseFileLimit(need))
	work, err := harness.NewWorkspace("attack", *keep)
	harness.Check(err)
	defer work.Close()
	if o.upstream == "" {
		f, err := startFixture(work, *groups)
		work.Check(err)
		o.upstream, o.upstreamPID, o.expected = f.url, f.pid, f.expected
	}
	o.serviceConfig = o.config
	if o.part3 {
		// The part-3 inputs need auth, trusted proxies and a limit the shipped file leaves
		// off; the baseline runs with the same file, so the ratio compares like with like.
		o.serviceConfig, err = writePart3Config(work.Dir, o.config)
		work.Check(err)
		secret := newJWTSecret()
		o.jwtSecret = []byte(secret)
		o.serviceEnv = []string{jwtSecretVariable + "=" + secret}
	}

	configNote := "shipped config " + o.config
	if o.part3 {
		configNote = "config derived from " + o.config + " (+ auth.jwt HS256, trustedProxies 127.0.0.1/32, rateLimit 1000000/s by ip, " +
			"/secure/groups, /anyteam/{team}/groups, /limited/groups 1/m), baseline and attack alike"
	}
	fmt.Printf("attack: %d rounds; wrk -t%d -c%d -d%s on /groups, upstream %s; service %s, %s, open files %d:%d\n",
		o.rounds, o.wrkThreads, o.wrkConnections, o.wrkDuration, o.upstream, o.bin, configNote, o.fdLimit, o.fdLimit)
	fmt.Printf("attacks from wrk's start + %s: %s\n", o.attackDelay, describeAttacks(o))
	fmt.Printf("this tool runs on GOMAXPROCS=%d; machine: %d cores\n", *procs, runtime.NumCPU())

	var rounds []roundResult
	for r := 1; r <= o.rounds; r++ {
		harness.WaitQuiet(*quietMax, *quietWait)
		result := runRound(work, o, r)
		printRound(o, result)
		rounds = append(rounds, result)
		if result.fatal != nil {
			break
		}
	}
	var checks []checkResult
	if o.checks {
		checks = runChecks(work, o)
	}
	if !summarize(o, rounds, checks) {
		work.Close()
		os.Exit(1)
	}
}

func describeAttacks(o options) string {
	var parts []string
	if o.attacks["flood"] {
		parts = append(parts, fmt.Sprintf("flood %d streams × %s (≤ %s in all)", o.flood.count, o.flood.duration, rate(o.flood.rate)))
	}
	if o.attacks["chunks"] {
		parts = append(parts, fmt.Sprintf("chunks %d × %s (≤ %s in all)", o.chunks.count, o.chunks.duration, rate(o.chunks.rate)))
	}
	if o.attacks["slowloris"] {
		parts = append(parts, fmt.Sprintf("slowloris %d × %s (slowhttptest -H: a header line per %s each)", o.slowloris.count, o.slowloris.duration, o.slowloris.interval))
	}
	if o.attacks["fds"] {
		parts = append(parts, fmt.Sprintf("fds burst %d × %s", o.fds.count, o.fds.duration))
	}
	for _, p := range []struct {
		name string
		spec attackSpec
	}{{"tokens", o.tokens}, {"params", o.params}, {"forwarded", o.forwarded}} {
		if o.attacks[p.name] {
			parts = append(parts, fmt.Sprintf("%s %d connections × %s (≤ %s; streams held %s, ≤ %d at once)", p.name, p.spec.count,
				p.spec.duration, perSecond(p.spec.perSecond), p.spec.hold, p.spec.streams))
		}
	}
	if o.attacks["xff"] {
		parts = append(parts, fmt.Sprintf("xff %d clients over %d connections, %d pipelined, ≤ %s (at most %s)", o.xff.clients,
			o.xff.count, o.xff.depth, perSecond(o.xff.perSecond), o.xff.duration))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func perSecond(requests float64) string {
	if requests <= 0 {
		return "no cap"
	}
	return fmt.Sprintf("%g requests/s", requests)
}

func rate(mib float64) string {
	if mib <= 0 {
		return "no cap"
	}
	return fmt.Sprintf("%g MiB/s", mib)
}

// MARK: - One round

type phaseResult struct {
	wrk     harness.WrkResult
	usage   usage
	peakKiB int
	elapsed time.Duration
}

type roundResult struct {
	round           int
	idleKiB         int
	threads         int
	baseline, under phaseResult
	alone           phaseResult // the attacks after wrk's end, without legitimate load
	attacks         []*attackStats
	recovered       bool
	attacksEnded    time.Time
	wrkOutlasted    bool // wrk ended after the attacks, so recovery counts from wrk's end
	recovery        time.Duration
	finalKiB        int
	logBytes        int64 // the service's output (warnings and errors only) in the round
	crashed         bool
	crash           string
	crashShort      string // exit status and when
	fatal           error  // the round could not run at all
}

func (r roundResult) ratio() float64 {
	if r.baseline.wrk.RPS <= 0 {
		return 0
	}
	return 100 * r.under.wrk.RPS / r.baseline.wrk.RPS
}

func (r roundResult) peakDeltaMiB() float64 {
	peak := r.baseline.peakKiB
	if r.under.peakKiB > peak {
		peak = r.under.peakKiB
	}
	if r.finalKiB > peak {
		peak = r.finalKiB
	}
	return float64(peak-r.idleKiB) / 1024
}

// rest is the CPU, in % of one core, that the machine spent on anything but the service,
// this tool, wrk and the upstream during the phase.
func (p phaseResult) rest() float64 {
	u := p.usage
	return u.machine - u.service - u.tool - percentOfCore(p.wrk.CPU, p.wrk.Elapsed) - u.upstream
}

// phase is what the samples between from and to show.
func phase(samples []sample, from, to time.Time) phaseResult {
	within := between(samples, from, to)
	return phaseResult{usage: phaseUsage(within), peakKiB: peakRSS(within), elapsed: to.Sub(from)}
}

func runRound(work *harness.Workspace, o options, round int) (r roundResult) {
	r.round = round
	logName := fmt.Sprintf("service-%d.log", round)
	logPath := filepath.Join(work.Dir, logName)
	args := []string{"--upstream", "tasks=" + o.upstream, "--upstream", "media=" + o.upstream, "--upstream", "search=" + o.upstream}
	if o.part3 {
		args = append(args, "--upstream", "accounts="+o.upstream) // /me/groups, which the forwarded attack asks
	}
	s, err := work.StartServiceWith(harness.ServiceOptions{
		Bin: o.bin, ConfigPath: o.serviceConfig, OpenFiles: o.fdLimit, Args: args, Env: o.serviceEnv,
	}, logName)
	if err != nil {
		r.fatal = err
		return r
	}
	defer func() {
		// A clean SIGTERM exits 0; a crash (the runtime may still be writing its backtrace
		// when SIGTERM comes) or a stop that needed SIGKILL does not.
		diedAlone := !s.Alive()
		s.Stop()
		if code := s.ExitCode(); diedAlone || code != 0 {
			r.crashed = true
			when := "during the round"
			if !diedAlone {
				when = "at SIGTERM"
			}
			r.crash = fmt.Sprintf("exit %d %s (%v): %s", code, when, s.ExitErr(), crashSummary(logPath))
			r.crashShort = fmt.Sprintf("exit %d %s", code, when)
		}
		if info, err := os.Stat(logPath); err == nil {
			r.logBytes = info.Size()
		}
	}()
	if err := checkBody(s, o.expected); err != nil {
		r.fatal = err
		return r
	}
	url := "http://" + s.Addr + "/groups"
	if o.warmup > 0 {
		harness.RunWrk(harness.Wrk{URL: url, Threads: o.wrkThreads, Connections: o.wrkConnections, Duration: o.warmup, Timeout: 5 * time.Second})
	}
	time.Sleep(time.Second)
	r.idleKiB = s.RSSKiB()
	r.threads = len(s.ThreadCPU())
	var upstreamPIDs []int
	if o.upstreamPID > 0 {
		upstreamPIDs = processTree(o.upstreamPID)
	}
	sm := startSampler(s, upstreamPIDs, 100*time.Millisecond)

	// Baseline: wrk alone.
	from := time.Now()
	wrk := harness.RunWrk(harness.Wrk{URL: url, Threads: o.wrkThreads, Connections: o.wrkConnections, Duration: o.wrkDuration, Timeout: 5 * time.Second})
	r.baseline = phase(sm.snapshot(), from, time.Now())
	r.baseline.wrk = wrk
	time.Sleep(time.Second)

	// Under attack: the same wrk; the attacks from attackDelay on.
	from = time.Now()
	var wrkEnded time.Time
	var wrkDone sync.WaitGroup
	wrkDone.Add(1)
	go func() {
		defer wrkDone.Done()
		wrk = harness.RunWrk(harness.Wrk{URL: url, Threads: o.wrkThreads, Connections: o.wrkConnections, Duration: o.wrkDuration, Timeout: 5 * time.Second})
		wrkEnded = time.Now()
	}()
	time.Sleep(o.attackDelay)
	r.attacks = runAttacks(s.Addr, o)
	r.attacksEnded = time.Now()
	wrkDone.Wait()
	// Idle is judged once the attacks have stopped and wrk has ended (by default wrk ends
	// first: the attacks run past it).
	stopped := time.Now()
	r.wrkOutlasted = stopped.Sub(r.attacksEnded) > 100*time.Millisecond
	// Recovery: until every thread has been idle for idleHold, or recoveryMax.
	for time.Since(stopped) < o.recoveryMax+o.idleHold && s.Alive() {
		time.Sleep(200 * time.Millisecond)
		if d, ok := recovery(sm.snapshot(), stopped, o.idleWindow, o.idlePercent, o.idleHold); ok {
			r.recovered, r.recovery = true, d
			break
		}
	}
	samples := sm.Stop()
	r.under = phase(samples, from, wrkEnded)
	r.under.wrk = wrk
	r.under.peakKiB = peakRSS(between(samples, from, time.Now())) // throughout: up to the end of recovery
	if aloneFrom := wrkEnded.Add(200 * time.Millisecond); r.attacksEnded.Sub(aloneFrom) >= 500*time.Millisecond {
		r.alone = phase(samples, aloneFrom, r.attacksEnded)
	}
	r.finalKiB = s.RSSKiB()
	if !s.Alive() {
		r.recovered = false
	}
	return r
}

// runAttacks runs the selected attacks at once and returns when all have closed their
// connections. The descriptor burst begins once the others have connected.
func runAttacks(addr string, o options) []*attackStats {
	start := time.Now()
	var all []*attackStats
	var done, connected sync.WaitGroup
	launch := func(name string, spec attackSpec, run func(string, attackSpec, time.Time, *attackStats, *sync.WaitGroup)) {
		if !o.attacks[name] {
			return
		}
		st := newStats(name, spec.count)
		all = append(all, st)
		done.Add(1)
		connected.Add(1)
		go func() {
			defer done.Done()
			run(addr, spec, start, st, &connected)
		}()
	}
	launch("flood", o.flood, flood)
	launch("chunks", o.chunks, chunks)
	launch("slowloris", o.slowloris, slowloris)
	launch("tokens", o.tokens, func(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
		probing(addr, spec, start, st, connected, tokenProbes(addr, o.jwtSecret, o.tokensNested))
	})
	launch("params", o.params, func(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
		probing(addr, spec, start, st, connected, paramProbes(addr))
	})
	launch("forwarded", o.forwarded, func(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
		probing(addr, spec, start, st, connected, forwardedProbes(addr, o.jwtSecret, o.maxHeaderBytes))
	})
	launch("xff", o.xff, xff)
	if o.attacks["fds"] {
		st := newStats("fds", o.fds.count)
		all = append(all, st)
		done.Add(1)
		go func() {
			defer done.Done()
			waitTimeout(&connected, 3*time.Second)
			descriptors(addr, o.fds, start, st)
		}()
	}
	done.Wait()
	return all
}

func waitTimeout(wg *sync.WaitGroup, limit time.Duration) {
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(limit):
	}
}

// crashSummary is the lines of a service log that say why it died (the runtime's or libc's
// message and the crashed thread), and how many accept() EMFILE warnings it holds.
func crashSummary(path string) string {
	data, _ := os.ReadFile(path)
	var picked []string
	emfile := 0
	for _, line := range strings.Split(string(data), "\n") {
		lower := strings.ToLower(line)
		if strings.Contains(lower, "too many open files") {
			emfile++
			continue
		}
		if len(picked) == 4 {
			continue
		}
		for _, mark := range []string{"double free", "fatal error", "program crashed", "crashed:", "assertion", "corrupted", "free():", "malloc", "segmentation", "out of memory", "precondition"} {
			if strings.Contains(lower, mark) {
				picked = append(picked, strings.TrimSpace(line))
				break
			}
		}
	}
	if len(picked) == 0 {
		picked = append(picked, lastLines(string(data), 1))
	}
	if emfile > 0 {
		picked = append(picked, fmt.Sprintf("(and %d 'Too many open files' warnings)", emfile))
	}
	return strings.Join(picked, " | ")
}

func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// MARK: - Reports

// noisy is the CPU, in % of one core, that other processes may use during a phase before the
// report calls it noisy ("rest": the machine's busy time minus the service, this tool, wrk and
// the upstream).
const noisy = 30

func mib(kib int) string {
	if kib < 0 {
		return "gone"
	}
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}

func threadList(u usage) string {
	var tids []int
	for tid := range u.threadMax {
		tids = append(tids, tid)
	}
	sort.Ints(tids)
	var parts []string
	for _, tid := range tids {
		parts = append(parts, fmt.Sprintf("%.0f", u.threadMax[tid]))
	}
	return strings.Join(parts, " / ")
}

func printRound(o options, r roundResult) {
	fmt.Printf("\nround %d", r.round)
	if r.fatal != nil {
		fmt.Printf(": could not run: %v\n", r.fatal)
		return
	}
	fmt.Printf(": idle RSS %s MiB after a %s warm-up, %d threads\n", mib(r.idleKiB), o.warmup, r.threads)
	fmt.Println("| phase | req/s | p50 ms | p99 ms | non-2xx | socket errors c/r/w/t | RSS peak MiB (Δ idle) | service CPU % | per-thread busiest 200 ms, % | tool % | wrk % | upstream % | rest % |")
	fmt.Println("|---|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|")
	for _, p := range []struct {
		name string
		ph   phaseResult
	}{{"baseline", r.baseline}, {"under attack", r.under}, {"attacks alone, after wrk", r.alone}} {
		if p.ph.elapsed == 0 {
			continue
		}
		u := p.ph.usage
		wrkPercent := percentOfCore(p.ph.wrk.CPU, p.ph.wrk.Elapsed)
		rest := p.ph.rest()
		requests := fmt.Sprintf("%.0f | %.1f | %.1f | %d | %s", p.ph.wrk.RPS, p.ph.wrk.P50, p.ph.wrk.P99, p.ph.wrk.Non2xx, p.ph.wrk.SocketErrors)
		if p.ph.wrk.Elapsed == 0 {
			requests = fmt.Sprintf("(%.1f s) | | | |", p.ph.elapsed.Seconds())
		}
		fmt.Printf("| %s | %s | %s (%+.1f) | %.0f | %s | %.0f | %.0f | %.0f | %.0f |\n",
			p.name, requests, mib(p.ph.peakKiB), float64(p.ph.peakKiB-r.idleKiB)/1024, u.service, threadList(u),
			u.tool, wrkPercent, u.upstream, rest)
		if p.ph.wrk.Err != nil {
			fmt.Printf("  (%s)\n", firstLine(p.ph.wrk.Err.Error()))
		}
		if rest > noisy {
			fmt.Printf("  NOISE: other processes used %.0f%% of a core during %s; its figures are not trustworthy\n", rest, p.name)
		}
	}
	fmt.Println("| attack | connections planned | established | connect failed | stream opened | sent | rate | closed by the service | median close, s after start | answers |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, st := range r.attacks {
		seconds := st.stopped.Sub(st.started).Seconds()
		bytes := st.bytes.Load()
		sent := fmt.Sprintf("%.1f MiB | %.1f MiB/s", float64(bytes)/(1<<20), float64(bytes)/(1<<20)/seconds)
		if bytes < 1<<20 {
			sent = fmt.Sprintf("%d B | %.0f B/s", bytes, float64(bytes)/seconds)
		}
		if st.name == "slowloris" {
			sent = "- | -" // slowhttptest does not say
		}
		opened := "-"
		if st.name != "chunks" && st.name != "slowloris" && st.name != "fds" && st.name != "xff" {
			opened = fmt.Sprint(st.opened.Load())
		}
		answers := st.answerSummary()
		if st.requests.Load() > 0 {
			answers = fmt.Sprintf("%d requests (%.0f/s): below", st.requests.Load(), float64(st.requests.Load())/seconds)
		}
		fmt.Printf("| %s | %d | %d | %d | %s | %s | %d | %.1f | %s |\n", st.name, st.planned, st.connected.Load(),
			st.dialFails.Load(), opened, sent, st.closedCount(), st.medianClose().Seconds(), answers)
	}
	for _, st := range r.attacks {
		if st.requests.Load() > 0 {
			fmt.Printf("answers to %s (kind, status, error code × count): %s\n", st.name, st.answerSummary())
		}
	}
	switch {
	case r.crashed:
		fmt.Printf("SERVICE CRASHED: %s\n", r.crash)
	case r.recovered:
		fmt.Printf("every thread idle (< %g%% of a core per %s, for %s) %.1f s after the attacks stopped; RSS then %s MiB\n",
			o.idlePercent, o.idleWindow, o.idleHold, r.recovery.Seconds(), mib(r.finalKiB))
		if r.wrkOutlasted {
			fmt.Println("  (wrk ran on after the attacks stopped: counted from wrk's end)")
		}
	default:
		fmt.Printf("threads NOT idle within %s after the attacks stopped; RSS then %s MiB\n", o.recoveryMax, mib(r.finalKiB))
	}
	fmt.Printf("service output in the round: %.1f MiB (log level warning)\n", float64(r.logBytes)/(1<<20))
}

func firstLine(text string) string {
	if cut := strings.IndexByte(text, '\n'); cut >= 0 {
		return text[:cut]
	}
	return text
}

func summarize(o options, rounds []roundResult, checks []checkResult) bool {
	var base, under, ratio, delta, recov []float64
	crashes, noisyRounds := 0, 0
	var crashNotes []string
	ran := 0
	worstDelta := 0.0
	for _, r := range rounds {
		if r.fatal != nil {
			continue
		}
		ran++
		base = append(base, r.baseline.wrk.RPS)
		under = append(under, r.under.wrk.RPS)
		ratio = append(ratio, r.ratio())
		d := r.peakDeltaMiB()
		delta = append(delta, d)
		if d > worstDelta {
			worstDelta = d
		}
		if r.recovered {
			recov = append(recov, r.recovery.Seconds())
		} else {
			recov = append(recov, 1e9) // never: sorts last
		}
		if r.baseline.rest() > noisy || r.under.rest() > noisy {
			noisyRounds++
		}
		if r.crashed {
			crashes++
			crashNotes = append(crashNotes, fmt.Sprintf("round %d (%s)", r.round, r.crashShort))
		}
	}
	for _, c := range checks {
		if c.crashed {
			crashes++
			crashNotes = append(crashNotes, c.name+" (see the check)")
		}
	}
	fmt.Printf("\nsummary over %d rounds (medians; min-max)\n", ran)
	fmt.Println("| measure | median | min | max |")
	fmt.Println("|---|---:|---:|---:|")
	row := func(name string, values []float64, format string) {
		if len(values) == 0 {
			fmt.Printf("| %s | | | |\n", name)
			return
		}
		sorted := append([]float64(nil), values...)
		sort.Float64s(sorted)
		show := func(v float64) string {
			if v >= 1e8 {
				return "never"
			}
			return fmt.Sprintf(format, v)
		}
		fmt.Printf("| %s | %s | %s | %s |\n", name, show(harness.Median(values)), show(sorted[0]), show(sorted[len(sorted)-1]))
	}
	row("baseline req/s", base, "%.0f")
	row("under attack req/s", under, "%.0f")
	row("under attack / baseline, %", ratio, "%.0f")
	row("RSS peak − idle, MiB", delta, "%.1f")
	row(fmt.Sprintf("threads idle again after, s (≤ %s watched)", o.recoveryMax), recov, "%.1f")

	if noisyRounds > 0 {
		fmt.Printf("NOISE: in %d of %d rounds other processes used more than %d%% of a core during wrk: read the throughput ratio with care\n",
			noisyRounds, ran, noisy)
	}
	ok := ran > 0
	verdict := func(pass bool, format string, args ...any) {
		word := "PASS"
		if !pass {
			word = "FAIL"
			ok = false
		}
		fmt.Printf("%s %s\n", word, fmt.Sprintf(format, args...))
	}
	fmt.Println()
	if ran == 0 {
		fmt.Println("FAIL no round ran")
	}
	verdict(crashes == 0, "no crash: %d crash(es) %s", crashes, strings.Join(crashNotes, ", "))
	verdict(ran > 0 && worstDelta <= float64(o.rssGoalMiB), "RSS ≤ idle + %d MiB throughout: worst round +%.1f MiB", o.rssGoalMiB, worstDelta)
	verdict(ran > 0 && harness.Median(ratio) >= o.throughputGoal, "throughput under attack ≥ %g%% of baseline: %.0f%% (median)", o.throughputGoal, harness.Median(ratio))
	recoveryText := "never (median)"
	if m := harness.Median(recov); m < 1e8 {
		recoveryText = fmt.Sprintf("%.1f s (median)", m)
	}
	verdict(ran > 0 && harness.Median(recov) <= o.recoveryGoal.Seconds(), "every thread idle within %s of the attacks' end: %s", o.recoveryGoal, recoveryText)
	for _, c := range checks {
		verdict(c.passed, "check %s: %s", c.name, c.detail)
	}
	return ok
}
