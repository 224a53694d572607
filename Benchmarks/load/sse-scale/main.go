// sse-scale: how many bytes one live /groups subscriber costs Tributary, and how long one
// update takes to reach all of them.
//
// For each run: start a fresh Tributary (one worker, a generated config with limits above
// -subscribers and no interval refresh) on this tool's own upstream; warm it up with a few
// subscribers; read its RSS; open -subscribers event streams from one epoll loop and wait
// until each has its first snapshot; read the RSS again: (after - before) / subscribers is
// the cost of one subscriber. Then -updates times: change the upstream's data, POST
// /groups/reload, and time-stamp, for every subscriber, when the snapshot with the new data
// arrives, relative to the moment just before the reload was sent.
//
// With -resources groups,rows each subscriber (a client) follows both: over one stream per
// resource (/groups and /rows: two connections), or with -events over one
// /events?resource=groups&resource=rows connection. The cost is then per client, and the
// update (of the groups) is timed on each client's groups.
//
// With -updates-as snapshot,patch each run is made twice, with fresh services: subscribers
// asking for whole snapshots, then for patches (?updates=patch); the summary compares them.
// -changing 1 makes an update change one group (the upstream's first) instead of all.
//
// With -fields id,name each run is made twice more, with fresh services: subscribers asking
// for every member, then for those fields only (?fields=…), which an update (it changes
// taskCount) leaves as they were. A round of the second then waits for the refresh's upstream
// calls and one more second, and counts the events the subscribers got (the goal: none); the
// summary compares the service's CPU per update.
//
// With -peers tributary,nchan each run (and mode) is made once more, with the same load
// client and settings, against Debian's nginx with the Nchan module (peers.go): the tool
// publishes to one Nchan channel the document (or patch) Tributary's subscribers get, and its
// subscribers follow it as EventSource. Besides arrival − t0, each update's FAN-OUT (arrival
// − the first subscriber's arrival) is reported, which leaves out Tributary's refresh (its
// upstream calls) and Nchan's publish; the summary sets the peers side by side.
//
// With -peers …,floor each run (and mode) is also made against the floor (floor.go): this
// process serves the same events itself, from -workers threads of its own making one write(2)
// per subscriber each, the least work any server could do: the machine's floor.
//
// The main goroutine, which the harness keeps on the main thread, starts the service (and
// nginx) and runs the epoll loop; the floor's goroutines never run on that thread.
//
//	sse-scale -bin .build/release/tributary [-subscribers 10000] [-runs 3] [-updates 5] [-groups 10] [-resources groups,rows [-events]] [-peers tributary,nchan,floor]
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

type roundResult struct {
	p50, p99, max, first, ack time.Duration
	missed                    int
	eventBytes                int    // the median size of the event that brought the update
	eventKinds                string // the kinds of those events, e.g. "patch" or "patch, snapshot"
	cpuMS, clientCPUMS        int
	preempted                 int // the service's involuntary context switches during the update
	otherCPUMS                int // CPU time of everything else on the machine during the update
	eventsPerWait             float64
	fullBatches               int
	rssKB                     int          // service RSS after the update reached everyone (-1: n/a, the floor)
	events                    int          // snapshot and patch events the subscribers got during the update
	writes                    *writeCounts // the floor's writes not taken whole at once (nil: other peers)

	// The fan-out: each subscriber's arrival − the first subscriber's, over the subscribers.
	fanP50, fanP99, fanMax time.Duration
}

type runResult struct {
	rssBefore, rssAfter, rssAfterUpdates int     // KiB
	perSubscriber                        float64 // connected, before any update
	perSubscriberUpdated                 float64 // after the updates: the fan-out's high-water mark included
	connectTime                          time.Duration
	lost                                 int
	rounds                               []roundResult
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("sse-scale: ")
	bin := flag.String("bin", "", "the tributary binary (required)")
	subscribers := flag.Int("subscribers", 10000, "live subscribers")
	runs := flag.Int("runs", 3, "runs, each with a fresh service")
	updates := flag.Int("updates", 5, "updates timed per run")
	groups := flag.Int("groups", 10, "groups in the upstream's list (snapshot size ≈ 100 B per group)")
	connecting := flag.Int("connecting", 256, "subscribers connecting at once (until they have their first snapshots)")
	keep := flag.Bool("keep", false, "keep the work directory (config, service log)")
	workers := flag.Int("workers", 1, "the service's workers (TRIBUTARY_WORKERS); the goal is for one")
	defaultLimits := flag.Bool("default-limits", false, "leave server.maxConnections and sse.maxSubscribers at their defaults (12,000 and 10,000)")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "before each run, wait until the machine is at most this % busy (env QUIET_MAX)")
	quietWait := flag.Duration("quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 600))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	resources := flag.String("resources", "groups", "what each subscriber follows: groups, or groups,rows")
	events := flag.Bool("events", false, "follow the resources over one GET /events connection per subscriber instead of one stream each")
	updatesAs := flag.String("updates-as", "snapshot", "what subscribers ask for: snapshot, patch (?updates=patch), or snapshot,patch (each run twice, compared)")
	changing := flag.Int("changing", 0, "groups an update changes, the first ones (default: all)")
	fields := flag.String("fields", "", "also run with subscribers asking for these fields only (?fields=…, e.g. id,name: an update changes none of them)")
	flag.StringVar(&profileCommand, "profile", "", "a command run during the updates of each run, stopped with SIGINT; {pid} is the service's pid (Nchan: nginx's first worker; the floor: this process, load client included), {run} the run, e.g. 'perf record -g -p {pid} -o /tmp/sse-{run}.data'")
	peersFlag := flag.String("peers", "tributary", "what is measured, each run, side by side: any of tributary, nchan (Debian's nginx with libnginx-mod-nchan) and floor (this process writing each event once per subscriber from -workers threads), e.g. tributary,nchan,floor")
	nchanModuleFlag := flag.String("nchan-module", "", "Nchan's nginx module (default: found with dpkg -L libnginx-mod-nchan)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: sse-scale -bin PATH [-subscribers N] [-runs R] [-updates U] [-groups G]")
		os.Exit(2)
	}
	shape, err := newLayout(*resources, *events)
	harness.Check(err)
	modes := strings.Split(*updatesAs, ",")
	for _, mode := range modes {
		if mode != "snapshot" && mode != "patch" {
			harness.Check(fmt.Errorf("-updates-as: snapshot, patch or snapshot,patch (found %q)", *updatesAs))
		}
	}
	if *changing <= 0 || *changing > *groups {
		*changing = *groups
	}
	peers, err := parsePeers(*peersFlag)
	harness.Check(err)
	module := ""
	if contains(peers, "nchan") {
		if len(shape.resources) > 1 || *events || *fields != "" {
			harness.Check(fmt.Errorf("-peers nchan: Nchan follows one channel of /groups' document: not with -resources groups,rows, -events or -fields"))
		}
		module, err = nchanModule(*nchanModuleFlag)
		harness.Check(err)
		_, _, err = nchanLimits(*workers, *subscribers)
		harness.Check(err)
	}
	files := *subscribers*shape.connectionsPerClient() + 100
	if contains(peers, "floor") {
		if len(shape.resources) > 1 || *events || *fields != "" {
			harness.Check(fmt.Errorf("-peers floor: the floor serves /groups' document only: not with -resources groups,rows, -events or -fields"))
		}
		// The floor holds the server's end of every connection in this process too.
		files = 2**subscribers + 100
		var limit syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit) == nil && int(limit.Max) < files {
			harness.Check(fmt.Errorf("-peers floor: this process holds both ends of each subscriber's connection (2 files each, + 100): the hard open-file limit %d allows at most %d subscribers",
				limit.Max, (int(limit.Max)-100)/2))
		}
	}
	harness.Check(harness.RaiseFileLimit(files))

	work, err := harness.NewWorkspace("sse-scale", *keep)
	harness.Check(err)
	up, err := startUpstream(*groups, *changing)
	work.Check(err)
	config, err := writeConfig(work.Dir, up.URL, *subscribers*shape.connectionsPerClient(), *subscribers*len(shape.resources),
		shape.follows("rows"), *defaultLimits)
	work.Check(err)
	fmt.Printf("sse-scale: %d subscribers each on %s, %d runs x %d updates, %d groups per snapshot (%d changing), updates as %s, %d worker(s), peers %s, binary %s\n",
		*subscribers, strings.Join(shape.paths(), " + "), *runs, *updates, *groups, *changing, *updatesAs, *workers, strings.Join(peers, ","), *bin)
	if module != "" {
		fmt.Printf("sse-scale: Nchan is /usr/sbin/nginx with %s, %d worker(s)\n", module, *workers)
	}

	projections := []string{""}
	if *fields != "" {
		projections = append(projections, *fields)
	}
	results := map[string][]runResult{}
	for run := 1; run <= *runs; run++ {
		for _, mode := range modes {
			for _, peerName := range peers {
				for _, projection := range projections { // only "" with nchan
					shape.patch = mode == "patch"
					shape.fields = projection
					name := resultName(peerName, mode, shape)
					var p peer
					if peerName == "nchan" {
						n, err := startNchan(work, nchanDir(work, run, mode), module, *workers, *subscribers, up, shape.patch)
						work.Check(err)
						fmt.Printf("run %d (%s): nginx pid %d, workers %v on 127.0.0.1:%d\n", run, name, n.nginx.PID(), n.workers, n.port())
						p = n
					} else if peerName == "floor" {
						f, err := startFloor(up, *workers, shape.patch)
						work.Check(err)
						work.OnClose(f.stop)
						fmt.Printf("run %d (%s): the floor in this process (pid %d) on 127.0.0.1:%d, %d writer thread(s)\n", run, name, os.Getpid(), f.port(), *workers)
						p = f
					} else {
						service, err := work.StartService(*bin, config, fmt.Sprintf("service-%d-%s.log", run, strings.ReplaceAll(name, ",", "-")), *workers)
						work.Check(err)
						fmt.Printf("run %d (%s): service pid %d on %s\n", run, name, service.PID, service.Addr)
						p = newTributaryPeer(service)
					}
					harness.WaitQuiet(*quietMax, *quietWait)
					result, err := measure(p, up, shape, *subscribers, *updates, *connecting)
					p.stop()
					if err != nil {
						fmt.Fprintf(os.Stderr, "%s log: %s\n", peerName, p.logTail())
					}
					work.Check(err)
					results[name] = append(results[name], result)
					printRun(run, name, result, shape.connectionsPerClient())
				}
			}
		}
	}
	if *fields != "" {
		for _, mode := range modes {
			shape.patch = mode == "patch"
			shape.fields = *fields
			printFieldsComparison(mode, results[mode], results[mode+shape.fieldsSuffix()], *fields)
		}
		work.Close()
		return
	}
	for _, peerName := range peers {
		for _, mode := range modes {
			shape.patch = mode == "patch"
			name := resultName(peerName, mode, shape)
			var paths []string
			if peerName == "nchan" {
				paths = []string{nchanSubscribePath}
			} else {
				paths = shape.paths()
			}
			printSummary(name, results[name], *subscribers, *workers, paths)
		}
	}
	if len(modes) == 2 && contains(peers, "tributary") {
		printComparison(results[modes[0]], results[modes[1]])
	}
	if len(peers) >= 2 {
		for _, mode := range modes {
			printPeerComparison(mode, peers, results)
		}
	}
	work.Close()
}

// resultName is what a peer's runs in one mode are reported and summed under: the mode (and
// projection) for Tributary, as without peers, "nchan MODE" for Nchan, "floor MODE" for the
// floor.
func resultName(peerName, mode string, shape layout) string {
	if peerName != "tributary" {
		return peerName + " " + mode
	}
	return mode + shape.fieldsSuffix()
}

func contains(list []string, value string) bool {
	for _, item := range list {
		if item == value {
			return true
		}
	}
	return false
}

// layout is what one subscriber opens: a stream of each resource, or one /events for all,
// asking for patches or not.
type layout struct {
	resources []string
	events    bool
	patch     bool
	fields    string // ?fields=… of the groups (empty: every member)
}

func (l layout) fieldsSuffix() string {
	if l.fields == "" {
		return ""
	}
	return " fields=" + l.fields
}

func newLayout(resources string, events bool) (layout, error) {
	l := layout{resources: strings.Split(resources, ","), events: events}
	if l.resources[0] != "groups" || len(l.resources) > 2 || (len(l.resources) == 2 && l.resources[1] != "rows") {
		return l, fmt.Errorf("-resources: groups, or groups,rows (found %q)", resources)
	}
	return l, nil
}

func (l layout) follows(resource string) bool {
	for _, r := range l.resources {
		if r == resource {
			return true
		}
	}
	return false
}

// paths are what one subscriber asks for, one connection each.
func (l layout) paths() []string {
	if l.events {
		path := "/events?resource=" + strings.Join(l.resources, "&resource=")
		if l.patch {
			path += "&updates=patch"
		}
		if l.fields != "" {
			path += "&groups.fields=" + l.fields
		}
		return []string{path}
	}
	var paths []string
	for _, r := range l.resources {
		var query []string
		if l.patch {
			query = append(query, "updates=patch")
		}
		if r == "groups" && l.fields != "" {
			query = append(query, "fields="+l.fields)
		}
		if len(query) > 0 {
			paths = append(paths, "/"+r+"?"+strings.Join(query, "&"))
		} else {
			paths = append(paths, "/"+r)
		}
	}
	return paths
}

func (l layout) connectionsPerClient() int { return len(l.paths()) }

// showsGroups says whether a subscriber's stream carries the groups, whose updates are timed.
func showsGroups(sub *harness.Subscriber) bool {
	return strings.HasPrefix(sub.Path, "/groups") || strings.Contains(sub.Path, "resource=groups") || sub.Path == nchanSubscribePath
}

// measure runs one peer: warm-up, subscribers, RSS, then `updates` timed updates.
func measure(p peer, up *harness.Upstream, shape layout, count, updates, connecting int) (runResult, error) {
	var result runResult
	// Warm-up: the code paths, the pipeline and the allocator's first arenas.
	paths := p.paths(shape)
	warmConnections := 100 * len(paths)
	warm, err := harness.NewSSEClients([]int{p.port()}, paths, warmConnections, connecting)
	if err != nil {
		return result, err
	}
	ok, err := warm.Run(time.Now().Add(30*time.Second), func() bool {
		return warm.FirstSnapshots+warm.Lost >= warmConnections && warm.Next == warmConnections
	})
	warm.CloseAll()
	if err != nil || !ok || warm.Lost > 0 {
		return result, fmt.Errorf("warm-up failed (err %v, lost %d)", err, warm.Lost)
	}
	time.Sleep(time.Second)
	result.rssBefore = p.rssKiB()

	connections := count * len(paths)
	c, err := harness.NewSSEClients([]int{p.port()}, paths, connections, connecting)
	if err != nil {
		return result, err
	}
	defer c.CloseAll()
	started := time.Now()
	ok, err = c.Run(started.Add(180*time.Second), func() bool { return c.Next == connections && c.FirstSnapshots+c.Lost >= connections })
	if err != nil {
		return result, err
	}
	if !ok {
		return result, fmt.Errorf("only %d of %d streams had their snapshots after 180 s (%d lost, %d error events, e.g. %s)",
			c.FirstSnapshots, connections, c.Lost, c.Errors, lastError(c))
	}
	result.connectTime = time.Since(started)
	if c.Lost > 0 {
		return result, fmt.Errorf("%d of %d streams failed while connecting, e.g. %q", c.Lost, connections, firstFailure(c))
	}
	c.Run(time.Now().Add(2*time.Second), func() bool { return false }) // settle, still reading
	result.rssAfter = p.rssKiB()
	result.perSubscriber = perSubscriber(result.rssBefore, result.rssAfter, count)

	stopProfile := startProfile(p.profilePID())
	defer stopProfile()
	for round := 0; round < updates; round++ {
		version := up.Version.Add(1)
		c.Target = version
		c.Reached = 0
		send := p.update(version)
		ackCh := make(chan time.Duration, 1)
		var updateFailure string
		callsBefore := up.Calls.Load()
		cpuBefore := p.cpuTicks()
		preemptedBefore := p.preempted()
		// The floor's threads are this process's: their CPU time, read per thread, is the
		// server's, and comes out of the load client's.
		inProcess, isInProcess := p.(inProcessPeer)
		var threadsBefore time.Duration
		var writesBefore writeCounts
		if isInProcess {
			threadsBefore, writesBefore = inProcess.threadCPU(), inProcess.writeCounts()
		}
		machineBefore := harness.MachineBusyTicks()
		clientBefore := selfCPU()
		sent := time.Now()
		go func() {
			// The request is bounded by its client's timeout (30 s).
			if err := send(); err != nil {
				updateFailure = err.Error()
				ackCh <- -1
				return
			}
			ackCh <- time.Since(sent)
		}()
		c.Waits, c.WaitEvents, c.FullBatches = 0, 0, 0
		updatesBefore := c.Updates
		if shape.fields != "" {
			// No subscriber is due an event: wait for the refresh's calls (the list and each
			// group's), then a second more, reading whatever comes.
			c.Run(sent.Add(30*time.Second), func() bool { return up.Calls.Load() >= callsBefore+int64(up.Groups())+1 })
			c.Run(time.Now().Add(time.Second), func() bool { return false })
		} else {
			c.Run(sent.Add(30*time.Second), func() bool { return c.Reached+c.Lost >= count })
		}
		events := c.Updates - updatesBefore
		waits, waitEvents, fullBatches := c.Waits, c.WaitEvents, c.FullBatches
		cpuAfter := p.cpuTicks()
		serverMS := (cpuAfter - cpuBefore) * 10
		var threadsSpent time.Duration
		if isInProcess {
			threadsSpent = inProcess.threadCPU() - threadsBefore
			serverMS = int((threadsSpent + time.Millisecond/2) / time.Millisecond)
		}
		clientCPU := selfCPU() - clientBefore - threadsSpent
		preempted := p.preempted() - preemptedBefore
		otherMS := (harness.MachineBusyTicks()-machineBefore)*10 - serverMS - int(clientCPU/time.Millisecond)
		ack := <-ackCh
		if ack < 0 {
			return result, fmt.Errorf("the update's request failed: %s", updateFailure)
		}
		var latencies []time.Duration
		var sizes []float64
		kinds := map[string]bool{}
		missed := 0
		for _, sub := range c.Subs {
			if !showsGroups(sub) {
				continue
			}
			if shape.fields != "" {
				continue
			}
			if sub.State != harness.StClosed && sub.Version == version {
				latencies = append(latencies, sub.Arrived.Sub(sent))
				sizes = append(sizes, float64(sub.UpdateBytes))
				kinds[sub.UpdateKind] = true
			} else {
				missed++
			}
		}
		var kindNames []string
		for kind := range kinds {
			kindNames = append(kindNames, kind)
		}
		sort.Strings(kindNames)
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		r := roundResult{ack: ack, missed: missed, cpuMS: serverMS, clientCPUMS: int(clientCPU / time.Millisecond), preempted: preempted, otherCPUMS: otherMS,
			eventsPerWait: float64(waitEvents) / float64(max1(waits)), fullBatches: fullBatches,
			eventBytes: int(harness.Median(sizes)), eventKinds: strings.Join(kindNames, ", "), events: events}
		if len(latencies) > 0 {
			r.first = latencies[0]
			r.p50 = harness.Percentile(latencies, 50)
			r.p99 = harness.Percentile(latencies, 99)
			r.max = latencies[len(latencies)-1]
			r.fanP50, r.fanP99, r.fanMax = fanOut(latencies)
		}
		if isInProcess {
			writes := inProcess.writeCounts().minus(writesBefore)
			r.writes = &writes
		}
		c.Run(time.Now().Add(time.Second), func() bool { return false })
		r.rssKB = p.rssKiB()
		result.rounds = append(result.rounds, r)
	}
	result.rssAfterUpdates = p.rssKiB()
	result.perSubscriberUpdated = perSubscriber(result.rssBefore, result.rssAfterUpdates, count)
	result.lost = c.Lost
	return result, p.check()
}

// perSubscriber is the RSS one subscriber added, in bytes; NaN (n/a) when the peer has no RSS
// of its own (the floor, whose process is the load client's).
func perSubscriber(beforeKiB, afterKiB, count int) float64 {
	if beforeKiB < 0 || afterKiB < 0 {
		return math.NaN()
	}
	return float64(afterKiB-beforeKiB) * 1024 / float64(count)
}

// orNA formats value, or gives "n/a" when it is NaN or negative (a figure the peer has not).
func orNA(format string, value float64) string {
	if math.IsNaN(value) || value < 0 {
		return "n/a"
	}
	return fmt.Sprintf(format, value)
}

// fanOut is the spread of one update over the subscribers that got it: p50, p99 and max of
// each arrival − the first arrival (sorted, not empty). Unlike arrival − t0 it leaves out what
// comes before the first byte leaves (Tributary's refresh and its upstream calls, Nchan's
// publish), so the peers' fan-outs compare alike.
func fanOut(sorted []time.Duration) (p50, p99, max time.Duration) {
	spread := make([]time.Duration, len(sorted))
	for i, arrival := range sorted {
		spread[i] = arrival - sorted[0]
	}
	return harness.Percentile(spread, 50), harness.Percentile(spread, 99), spread[len(spread)-1]
}

// An update is "quiet" when the rest of the machine used less CPU than this meanwhile.
const quietOtherMS = 50

var profileCommand string
var profileRun int

// startProfile runs -profile (e.g. perf record, perf stat, strace -c) attached to the
// service; the returned function stops it with SIGINT, as those tools expect, and waits.
func startProfile(pid int) func() {
	if profileCommand == "" {
		return func() {}
	}
	profileRun++
	words := strings.Fields(strings.NewReplacer("{pid}", fmt.Sprint(pid), "{run}", fmt.Sprint(profileRun)).Replace(profileCommand))
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return func() {}
	}
	time.Sleep(time.Second) // let it attach
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}

// lastError is the data of an error event some subscriber received last, if any.
func lastError(c *harness.SSEClients) string {
	for _, s := range c.Subs {
		if s != nil && s.LastError != "" {
			return s.LastError
		}
	}
	return "none"
}

func firstFailure(c *harness.SSEClients) string {
	for _, s := range c.Subs {
		if s != nil && s.CloseWhy != "" {
			return s.CloseWhy
		}
	}
	return ""
}

// printRun is one run's table; the service is the peer's process (Tributary), its workers
// (nginx with Nchan) or its writer threads (the floor), and "answered" its answer to the
// update's request (the reload's 202, the publish's 201, the floor's writers all done).
func printRun(run int, name string, r runResult, connectionsPerClient int) {
	if r.rssBefore < 0 {
		fmt.Printf("\nrun %d (%s): RSS n/a (the floor shares this process with the load client); connected in %.1f s; %d lost\n",
			run, name, r.connectTime.Seconds(), r.lost)
	} else {
		fmt.Printf("\nrun %d (%s): RSS %d KiB before, %d KiB with subscribers (%.0f B each), %d KiB after the updates (%.0f B each, %.0f B per connection); connected in %.1f s; %d lost\n",
			run, name, r.rssBefore, r.rssAfter, r.perSubscriber, r.rssAfterUpdates, r.perSubscriberUpdated,
			r.perSubscriberUpdated/float64(connectionsPerClient), r.connectTime.Seconds(), r.lost)
	}
	fmt.Println("| update | event | events | event bytes | first ms | p50 ms | p99 ms | max ms | fan-out p50 ms | fan-out p99 ms | fan-out max ms | answered ms | missed | service CPU ms | preempted | client CPU ms | client events/wait (full batches) | other CPU ms | service RSS KiB after |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, round := range r.rounds {
		fmt.Printf("| %d | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d | %.1f (%d) | %d | %s |\n", i+1, round.eventKinds, round.events, round.eventBytes,
			harness.Milliseconds(round.first), harness.Milliseconds(round.p50), harness.Milliseconds(round.p99), harness.Milliseconds(round.max),
			harness.Milliseconds(round.fanP50), harness.Milliseconds(round.fanP99), harness.Milliseconds(round.fanMax),
			harness.Milliseconds(round.ack), round.missed, round.cpuMS, round.preempted, round.clientCPUMS, round.eventsPerWait, round.fullBatches, round.otherCPUMS,
			orNA("%.0f", float64(round.rssKB)))
	}
	var writes []string
	for i, round := range r.rounds {
		if w := round.writes; w != nil {
			writes = append(writes, fmt.Sprintf("%d: %d/%d/%d/%d/%d", i+1, w.short, w.again, w.retried, w.failed, w.unfinished))
		}
	}
	if len(writes) > 0 {
		fmt.Printf("floor writes not taken whole at once, per update (short / EAGAIN / retried / failed / unfinished): %s\n", strings.Join(writes, ", "))
	}
}

func printSummary(name string, results []runResult, count, workers int, paths []string) {
	var perSub, perSubUpdated, before, after, afterUpdates, first, p50, p99, max, cpu, clientCPU, preempted, other []float64
	var fanP50, fanP99, fanMax []float64
	// goal is a row's goal and met cells: Tributary's goals, left blank for Nchan's and the
	// floor's runs.
	goal := func(text string, met bool) string {
		if strings.HasPrefix(name, "nchan") || strings.HasPrefix(name, "floor") {
			return " |"
		}
		return text + " | " + harness.Yes(met)
	}
	var writes writeCounts
	hasWrites := false
	missed := 0
	for _, r := range results {
		perSub = append(perSub, r.perSubscriber)
		perSubUpdated = append(perSubUpdated, r.perSubscriberUpdated)
		before = append(before, float64(r.rssBefore))
		after = append(after, float64(r.rssAfter))
		afterUpdates = append(afterUpdates, float64(r.rssAfterUpdates))
		for _, round := range r.rounds {
			first = append(first, float64(round.first)/1e6)
			p50 = append(p50, float64(round.p50)/1e6)
			p99 = append(p99, float64(round.p99)/1e6)
			max = append(max, float64(round.max)/1e6)
			fanP50 = append(fanP50, float64(round.fanP50)/1e6)
			fanP99 = append(fanP99, float64(round.fanP99)/1e6)
			fanMax = append(fanMax, float64(round.fanMax)/1e6)
			cpu = append(cpu, float64(round.cpuMS))
			clientCPU = append(clientCPU, float64(round.clientCPUMS))
			preempted = append(preempted, float64(round.preempted))
			other = append(other, float64(round.otherCPUMS))
			missed += round.missed
			if round.writes != nil {
				writes.add(*round.writes)
				hasWrites = true
			}
		}
	}
	fmt.Printf("\nsummary (%s): medians over %d runs (RSS) and %d updates (latency), %d subscribers each on %s (%d connections) on %d worker(s)\n",
		name, len(results), len(p99), count, strings.Join(paths, " + "), count*len(paths), workers)
	fmt.Println("| measure | median | goal | met |")
	fmt.Println("|---|---:|---:|---|")
	// RSS is n/a for the floor (-1 KiB, NaN per subscriber): its process is the load client's.
	fmt.Printf("| RSS before subscribers | %s | | |\n", orNA("%.1f MiB", harness.Median(before)/1024))
	fmt.Printf("| RSS with subscribers | %s | | |\n", orNA("%.1f MiB", harness.Median(after)/1024))
	fmt.Printf("| RSS after the updates | %s | | |\n", orNA("%.1f MiB", harness.Median(afterUpdates)/1024))
	fmt.Printf("| RSS per subscriber, connected | %s | | |\n", orNA("%.0f B", harness.Median(perSub)))
	perSubMedian := harness.Median(perSubUpdated)
	fmt.Printf("| RSS per subscriber, after updates (fan-out high-water included) | %s | %s |\n", orNA("%.0f B", perSubMedian), goal("≤ 8192 B", perSubMedian <= 8192))
	fmt.Printf("| update: first subscriber | %.1f ms | | |\n", harness.Median(first))
	fmt.Printf("| update: p50 | %.1f ms | | |\n", harness.Median(p50))
	p99Median := harness.Median(p99)
	fmt.Printf("| update: p99 | %.1f ms | %s |\n", p99Median, goal("≤ 250 ms", p99Median <= 250 && missed == 0))
	sizes, _, _ := roundMedians(results)
	fmt.Printf("| bytes of the event that brought an update | %.0f B | | |\n", sizes)
	fmt.Printf("| update: max (all reached) | %.1f ms | | |\n", harness.Median(max))
	fmt.Printf("| fan-out (arrival − first arrival): p50 | %.1f ms | | |\n", harness.Median(fanP50))
	fmt.Printf("| fan-out: p99 | %.1f ms | | |\n", harness.Median(fanP99))
	fmt.Printf("| fan-out: max | %.1f ms | | |\n", harness.Median(fanMax))
	fmt.Printf("| service CPU per update | %.0f ms | | |\n", harness.Median(cpu))
	fmt.Printf("| load client CPU per update | %.0f ms | | |\n", harness.Median(clientCPU))
	fmt.Printf("| service preempted per update (involuntary switches) | %.0f | | |\n", harness.Median(preempted))
	fmt.Printf("| other CPU on the machine per update (noise) | %.0f ms | | |\n", harness.Median(other))
	fmt.Printf("| subscribers missing an update | %d | %s |\n", missed, goal("0", missed == 0))
	if hasWrites {
		fmt.Printf("| floor: writes short / EAGAIN / retried / failed / unfinished, all updates | %d / %d / %d / %d / %d | | |\n",
			writes.short, writes.again, writes.retried, writes.failed, writes.unfinished)
	}
	// The machine is shared: updates during which other processes used the CPU are slower
	// for reasons outside the service. The same medians over the quiet updates only:
	var quietP50, quietP99, quietMax []float64
	for _, r := range results {
		for _, round := range r.rounds {
			if round.otherCPUMS < quietOtherMS {
				quietP50 = append(quietP50, float64(round.p50)/1e6)
				quietP99 = append(quietP99, float64(round.p99)/1e6)
				quietMax = append(quietMax, float64(round.max)/1e6)
			}
		}
	}
	fmt.Printf("\nquiet updates only (other processes used < %d ms of CPU during the update): %d of %d\n", quietOtherMS, len(quietP99), len(p99))
	if len(quietP99) > 0 {
		fmt.Println("| measure | median | goal | met |")
		fmt.Println("|---|---:|---:|---|")
		fmt.Printf("| update: p50 | %.1f ms | | |\n", harness.Median(quietP50))
		fmt.Printf("| update: p99 | %.1f ms | %s |\n", harness.Median(quietP99), goal("≤ 250 ms", harness.Median(quietP99) <= 250 && missed == 0))
		fmt.Printf("| update: max | %.1f ms | | |\n", harness.Median(quietMax))
	}
}

// roundMedians are the medians, over every update of `results`, of the update event's size,
// the p99 arrival, and the service's CPU time.
func roundMedians(results []runResult) (bytes, p99, cpu float64) {
	var sizes, p99s, cpus []float64
	for _, r := range results {
		for _, round := range r.rounds {
			sizes = append(sizes, float64(round.eventBytes))
			p99s = append(p99s, float64(round.p99)/1e6)
			cpus = append(cpus, float64(round.cpuMS))
		}
	}
	return harness.Median(sizes), harness.Median(p99s), harness.Median(cpus)
}

// printFieldsComparison sets the runs of one mode side by side: subscribers asking for every
// member, then for `fields` only, which no update changed.
func printFieldsComparison(mode string, all, projected []runResult, fields string) {
	var allEvents, projectedEvents, allCPU, projectedCPU []float64
	for _, r := range all {
		for _, round := range r.rounds {
			allEvents = append(allEvents, float64(round.events))
			allCPU = append(allCPU, float64(round.cpuMS))
		}
	}
	for _, r := range projected {
		for _, round := range r.rounds {
			projectedEvents = append(projectedEvents, float64(round.events))
			projectedCPU = append(projectedCPU, float64(round.cpuMS))
		}
	}
	a, p := harness.Median(allCPU), harness.Median(projectedCPU)
	fmt.Printf("\n%s updates: every member against fields=%s, same runs (medians over every update)\n", mode, fields)
	fmt.Println("| measure | every member | fields | ratio | goal | met |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	fmt.Printf("| events per update, all subscribers | %.0f | %.0f | | 0 with fields | %s |\n", harness.Median(allEvents), harness.Median(projectedEvents),
		harness.Yes(maxFloat(projectedEvents) == 0))
	fmt.Printf("| service CPU per update | %.0f ms | %.0f ms | %.0f%% | ≤ 20%% | %s |\n", a, p, 100*p/a, harness.Yes(p <= 0.2*a))
}

func maxFloat(values []float64) float64 {
	top := 0.0
	for _, v := range values {
		if v > top {
			top = v
		}
	}
	return top
}

// printComparison sets the runs of the two modes side by side (snapshots, then patches).
func printComparison(snapshots, patches []runResult) {
	sBytes, sP99, sCPU := roundMedians(snapshots)
	pBytes, pP99, pCPU := roundMedians(patches)
	fmt.Println("\nsnapshots against patches, same runs (medians over every update)")
	fmt.Println("| measure | snapshots | patches | ratio | goal | met |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	fmt.Printf("| bytes per update, per subscriber | %.0f B | %.0f B | %.1f× smaller | ≥ 20× | %s |\n", sBytes, pBytes, sBytes/pBytes, harness.Yes(sBytes >= 20*pBytes))
	fmt.Printf("| update: p99 | %.1f ms | %.1f ms | %.2f | not worse | %s |\n", sP99, pP99, pP99/sP99, harness.Yes(pP99 <= sP99))
	fmt.Printf("| service CPU per update | %.0f ms | %.0f ms | %.2f | not worse | %s |\n", sCPU, pCPU, pCPU/sCPU, harness.Yes(pCPU <= sCPU))
}

// peerTitles are the peers' names in the comparison's columns.
var peerTitles = map[string]string{"tributary": "Tributary", "nchan": "Nchan", "floor": "Floor"}

// printPeerComparison sets the peers' runs of one mode side by side (Tributary, Nchan, the
// floor: those measured, in that order): the same subscribers, client and payloads (the event
// sizes say whether the payloads matched). The ratio columns are Tributary / Nchan, then each
// peer / Floor: the floor is the least any server could do, so X / Floor is how far X is
// from the machine's bound.
func printPeerComparison(mode string, peers []string, results map[string][]runResult) {
	type row struct {
		measure, unit string
		pick          func(r runResult, round roundResult) float64
		perRun        bool // a run's figure (RSS), else an update's
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	rows := []row{
		{"RSS per subscriber, connected", "B", func(r runResult, _ roundResult) float64 { return r.perSubscriber }, true},
		{"RSS per subscriber, after the updates", "B", func(r runResult, _ roundResult) float64 { return r.perSubscriberUpdated }, true},
		{"bytes of the event that brought an update", "B", func(_ runResult, u roundResult) float64 { return float64(u.eventBytes) }, false},
		{"update: first subscriber (since t0)", "ms", func(_ runResult, u roundResult) float64 { return ms(u.first) }, false},
		{"update: p99 (since t0)", "ms", func(_ runResult, u roundResult) float64 { return ms(u.p99) }, false},
		{"fan-out: p50", "ms", func(_ runResult, u roundResult) float64 { return ms(u.fanP50) }, false},
		{"fan-out: p99", "ms", func(_ runResult, u roundResult) float64 { return ms(u.fanP99) }, false},
		{"fan-out: max", "ms", func(_ runResult, u roundResult) float64 { return ms(u.fanMax) }, false},
		{"service CPU per update (Nchan: nginx workers; Floor: its writer threads)", "ms", func(_ runResult, u roundResult) float64 { return float64(u.cpuMS) }, false},
	}
	median := func(results []runResult, r row) float64 {
		var values []float64
		for _, run := range results {
			if r.perRun {
				values = append(values, r.pick(run, roundResult{}))
				continue
			}
			for _, round := range run.rounds {
				values = append(values, r.pick(run, round))
			}
		}
		return harness.Median(values)
	}
	name := func(peer string) string { return resultName(peer, mode, layout{}) }
	type ratio struct{ over, under string }
	var ratios []ratio
	if contains(peers, "tributary") && contains(peers, "nchan") {
		ratios = append(ratios, ratio{"tributary", "nchan"})
	}
	if contains(peers, "floor") {
		for _, peer := range peers {
			if peer != "floor" {
				ratios = append(ratios, ratio{peer, "floor"})
			}
		}
	}
	var titles []string
	for _, peer := range peers {
		titles = append(titles, peerTitles[peer])
	}
	header := "| measure | " + strings.Join(titles, " | ") + " |"
	rule := "|---|" + strings.Repeat("---:|", len(peers))
	for _, q := range ratios {
		header += " " + peerTitles[q.over] + " / " + peerTitles[q.under] + " |"
		rule += "---:|"
	}
	fmt.Printf("\n%s against %s, %s updates (medians over runs for RSS, over runs x updates for the rest)\n", titles[0], strings.Join(titles[1:], " and "), mode)
	fmt.Println(header)
	fmt.Println(rule)
	for _, r := range rows {
		format := "%.1f " + r.unit
		if r.unit == "B" {
			format = "%.0f " + r.unit
		}
		values := map[string]float64{}
		line := "| " + r.measure + " |"
		for _, peer := range peers {
			values[peer] = median(results[name(peer)], r)
			line += " " + orNA(format, values[peer]) + " |"
		}
		for _, q := range ratios {
			// Blank when either is n/a (the floor's RSS) or the divisor is 0 (CPU is counted
			// in 10 ms ticks for processes: a small run's may be 0).
			cell := ""
			if over, under := values[q.over], values[q.under]; under > 0 && !math.IsNaN(over) && !math.IsNaN(under) {
				cell = fmt.Sprintf("%.2f", over/under)
			}
			line += " " + cell + " |"
		}
		fmt.Println(line)
	}
	line := "| subscribers missing an update |"
	for _, peer := range peers {
		line += fmt.Sprintf(" %d |", missedUpdates(results[name(peer)]))
	}
	fmt.Println(line + strings.Repeat(" |", len(ratios)))
	// The data lines are the same bytes; the id lines differ (Nchan's "1795943795:0" against
	// the 16 hex digits of Tributary and the floor): 3-4 bytes, 4% of a one-replace patch's event.
	first := median(results[name(peers[0])], rows[2])
	for _, peer := range peers[1:] {
		bytes := median(results[name(peer)], rows[2])
		if first > 0 && (bytes/first > 1.05 || bytes/first < 0.95) {
			fmt.Printf("WARNING: the event sizes of %s and %s differ by %.0f%%: the peers did not carry the same payload\n",
				peerTitles[peers[0]], peerTitles[peer], 100*(bytes/first-1))
		}
	}
}

func missedUpdates(results []runResult) int {
	missed := 0
	for _, r := range results {
		for _, round := range r.rounds {
			missed += round.missed
		}
	}
	return missed
}

// selfCPU is this process's user + system CPU time so far.
func selfCPU() time.Duration {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
