// fleet-chaos: the fleet held to its promises while everything around it goes wrong. Three
// replicas (one worker each, `cluster.leaseTTL` -lease-ttl, /groups refreshed every -refresh)
// behind Debian's nginx (the repository's deploy/nginx template), -subscribers /groups event
// streams and -json-rate JSON GETs a second through nginx; then, for -duration, one event
// every -event-every in turn:
//
//   - freeze Redis: SIGSTOP for -freeze, then SIGCONT;
//   - kill the lease holder: SIGKILL the replica holding the lease of groups, start it again
//     on its port -restart-after later;
//   - restart Redis: SIGKILL, start it again, empty, on its port a second later;
//
// and all along, every second, messages and values written to Redis without the fleet's
// secret (forger.go): states with the largest producedAt and a body that is not JSON, a
// guessed seal around a marked document, 9 MiB states, the latest overwritten, the lease set
// to a replica's bare id, reloads, control requests and replies to every replica, and
// genuine states and reloads played back.
//
// It reports, with each goal: replicas that exited without being killed (0), forged or
// invalid documents delivered to a subscriber (0), the longest gap between two snapshots of
// any subscriber during the run (≤ leaseTTL + refresh + 1 s; a subscriber whose stream ends
// reconnects through nginx after -reconnect-after, and the gap spans the reconnect), RSS per
// replica before and after, JSON answers by status, and what the replicas dropped
// (tributary_cluster_rejected_total by reason). Everything runs on loopback and is stopped by
// its PID.
//
//	fleet-chaos -bin .build/release/tributary -template deploy/nginx/tributary.conf.template [-duration 90s] [-subscribers 1000]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

var (
	bin      string
	work     *harness.Workspace
	redis    *harness.Redis
	config   string
	replicas []*replica
	// Replicas exited without being killed by this tool, with why.
	crashes   []string
	crashLock sync.Mutex
)

// replica is one place in the fleet (a port nginx sends to) and the process now on it.
type replica struct {
	index    int
	port     int
	service  *harness.Service
	killed   bool // this tool SIGKILLed the current process
	restarts int
	// Each process that ran on the port during the run, the current one last.
	lives []*life
	// What the processes before the current one had dropped, by reason.
	rejectedBefore map[string]float64
}

// life is one process of a replica during the run: its RSS once it served (at the start of
// the run, or 5 s after a restart, its subscribers back) and at its end (before its SIGKILL,
// or at the end of the run).
type life struct {
	pid               int
	from, to          time.Duration // since the run began
	rssFirst, rssLast int           // KiB
	streamsLast       float64       // its /groups streams at its end
}

// end notes the process's RSS and streams at its end.
func (l *life) end(s *harness.Service, at time.Duration) {
	l.to, l.rssLast = at, s.RSSKiB()
	l.streamsLast, _ = s.Metric(`tributary_sse_subscribers{resource="groups"}`)
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("fleet-chaos: ")
	flag.StringVar(&bin, "bin", "", "the tributary binary (required)")
	template := flag.String("template", "deploy/nginx/tributary.conf.template", "the nginx template")
	duration := flag.Duration("duration", 90*time.Second, "how long the chaos lasts")
	subscribers := flag.Int("subscribers", 1000, "/groups event streams through nginx")
	jsonRate := flag.Int("json-rate", 100, "JSON GET /groups a second through nginx")
	leaseTTL := flag.Duration("lease-ttl", 3*time.Second, "cluster.leaseTTL")
	refresh := flag.Duration("refresh", time.Second, "resources.groups.refreshInterval")
	eventEvery := flag.Duration("event-every", 10*time.Second, "one chaos event this often")
	freeze := flag.Duration("freeze", 4*time.Second, "how long Redis stays stopped (SIGSTOP)")
	restartAfter := flag.Duration("restart-after", 2*time.Second, "a killed replica starts again this much later")
	reconnectAfter := flag.Duration("reconnect-after", 200*time.Millisecond, "a subscriber whose stream ended reconnects this much later")
	forgeLeases := flag.Bool("forge-leases", true, "the forger writes the lease too (which clears a killed holder's lease early)")
	forgeHuge := flag.Bool("forge-huge", true, "the forger publishes a 9 MiB state every 10 s")
	keep := flag.Bool("keep", false, "keep the work directory (configuration, logs)")
	quietMax := flag.Int("quiet-max", harness.EnvInt("QUIET_MAX", 15), "first wait until the machine is at most this % busy (env QUIET_MAX)")
	quietWait := flag.Duration("quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 300))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	flag.Parse()
	if bin == "" {
		fmt.Fprintln(os.Stderr, "usage: fleet-chaos -bin PATH [-template deploy/nginx/tributary.conf.template] [-duration 90s] [flags]")
		os.Exit(2)
	}
	harness.Check(harness.RaiseFileLimit(4*(*subscribers) + 2000))
	var err error
	work, err = harness.NewWorkspace("fleet-chaos", *keep)
	harness.Check(err)
	harness.WaitQuiet(*quietMax, *quietWait)

	// Every refresh a new snapshot that names its list call, so a subscriber can tell the
	// upstream's document from any other (a forged one); the metadata never changes.
	up, err := harness.StartUpstream(harness.UpstreamOptions{Groups: 10, Changing: 10, NameListCalls: true})
	work.Check(err)
	redis, err = work.StartRedis()
	work.Check(err)
	config, err = writeConfig(up.URL, *leaseTTL, *refresh, 4*(*subscribers)+1000)
	work.Check(err)
	var ports []int
	for i := 0; i < 3; i++ {
		r := &replica{index: i, rejectedBefore: map[string]float64{}}
		work.Check(r.start())
		replicas = append(replicas, r)
		ports = append(ports, r.port)
	}
	nginx, err := harness.StartNginx(*template, filepath.Join(work.Dir, "nginx"), ports, 2*(*subscribers)+1000)
	work.Check(err)
	work.OnClose(nginx.Stop)
	fmt.Printf("fleet-chaos: redis-server pid %d, replicas on ports %v, nginx on %d, upstream %s, binary %s\n",
		redis.PID(), ports, nginx.Port, up.URL, bin)

	streams := newSubscribers(nginx.Port, *subscribers, *reconnectAfter)
	streams.start()
	if !streams.waitAllSnapshotted(60 * time.Second) {
		work.Check(fmt.Errorf("only %d of %d subscribers had a first snapshot within 60 s", streams.snapshotted(), *subscribers))
	}
	fmt.Printf("%d subscribers connected through nginx, each with a snapshot; settling 5 s\n", *subscribers)
	time.Sleep(5 * time.Second)
	for _, r := range replicas {
		r.lives = []*life{{pid: r.service.PID, rssFirst: r.service.RSSKiB()}}
	}

	// The run.
	stop := make(chan struct{})
	var running sync.WaitGroup
	load := startJSONLoad(nginx.Port, *jsonRate, stop, &running)
	forger := newForger(redis.Port, *forgeLeases, *forgeHuge)
	running.Add(1)
	go func() {
		defer running.Done()
		forger.run(stop)
	}()
	began := time.Now()
	streams.beginWindow(began)
	fmt.Printf("\n== chaos for %s: an event every %s (freeze Redis %s, kill the lease holder, restart Redis), forgeries every second\n",
		*duration, *eventEvery, *freeze)
	events := []struct {
		name string
		run  func() string
	}{
		{"freeze Redis", func() string {
			redis.Signal(syscall.SIGSTOP)
			time.Sleep(*freeze)
			redis.Signal(syscall.SIGCONT)
			return fmt.Sprintf("SIGSTOP, %s, SIGCONT", *freeze)
		}},
		{"kill the lease holder", func() string { return killLeaseHolder(began, *restartAfter) }},
		{"restart Redis", func() string {
			redis.Kill()
			time.Sleep(time.Second)
			if err := redis.Restart(); err != nil {
				return "restart failed: " + err.Error()
			}
			return "SIGKILL, started again empty 1 s later"
		}},
	}
	var happened []happening
	for index := 0; time.Since(began)+*eventEvery <= *duration; index++ {
		time.Sleep(time.Until(began.Add(time.Duration(index+1) * *eventEvery)))
		event := events[index%len(events)]
		at := time.Now()
		fmt.Printf("  t=%-6s %-22s %s\n", at.Sub(began).Round(100*time.Millisecond), event.name, event.run())
		happened = append(happened, happening{event.name, at})
	}
	time.Sleep(time.Until(began.Add(*duration)))
	close(stop)
	running.Wait()
	streams.endWindow(time.Now())
	for _, r := range replicas {
		r.lives[len(r.lives)-1].end(r.service, time.Since(began))
	}
	fmt.Printf("  t=%-6s end of the run\n", time.Since(began).Round(100*time.Millisecond))

	// After: every subscriber still receives, every replica still runs.
	after := time.Now()
	allFresh := streams.waitAllSnapshottedSince(after, *leaseTTL+*refresh+5*time.Second)
	fmt.Printf("\nlongest gap that ended in each event's window (until the next event), subscribers with a gap over %s there:\n", longGap)
	for index, event := range happened {
		end := time.Now()
		if index+1 < len(happened) {
			end = happened[index+1].at
		}
		longest, count := streams.longestGapBetween(event.at, end)
		fmt.Printf("  t=%-6s %-22s %6s  %d\n", event.at.Sub(began).Round(time.Second), event.name, longest.Round(10*time.Millisecond), count)
	}
	report(streams, load, forger, *leaseTTL, *refresh, allFresh)
	streams.stop()
	work.Close()
}

// happening is a chaos event that ran, and when.
type happening struct {
	name string
	at   time.Time
}

// start runs the replica's process (on its port, once it has one) and waits until it has
// joined the fleet; a watcher notes whether it exits without this tool killing it.
func (r *replica) start() error {
	s, err := work.StartServiceWith(harness.ServiceOptions{
		Bin: bin, ConfigPath: config, Workers: 1, Port: r.port,
		Args: []string{"--redis", redis.URL}, Env: []string{"TRIBUTARY_CLUSTER_SECRET=" + harness.FleetSecret},
	}, fmt.Sprintf("replica-%d-%d.log", r.index, r.restarts))
	if err != nil {
		return err
	}
	r.service, r.port, r.killed = s, s.Port, false
	go func(s *harness.Service) {
		<-s.Done()
		if !r.killedProcess(s) {
			crashLock.Lock()
			crashes = append(crashes, fmt.Sprintf("replica on port %d (pid %d) exited with %d: %s", r.port, s.PID, s.ExitCode(), s.LogTail()))
			crashLock.Unlock()
		}
	}(s)
	if !waitFor(15*time.Second, func() bool { v, ok := s.Metric("tributary_cluster_connected"); return ok && v == 1 }) {
		return fmt.Errorf("replica pid %d did not join the fleet within 15 s: %s", s.PID, s.LogTail())
	}
	return nil
}

var killLock sync.Mutex

func (r *replica) killedProcess(s *harness.Service) bool {
	killLock.Lock()
	defer killLock.Unlock()
	return r.killed && r.service == s
}

// killLeaseHolder SIGKILLs the replica that holds the lease of groups and starts it again.
func killLeaseHolder(began time.Time, restartAfter time.Duration) string {
	var holder *replica
	for _, r := range replicas {
		if v, ok := r.service.Metric(`tributary_cluster_lease_held{resource="groups"}`); ok && v == 1 {
			holder = r
		}
	}
	if holder == nil {
		return "no replica holds the lease now: skipped"
	}
	for reason, value := range rejectedBy(holder.service) {
		holder.rejectedBefore[reason] += value
	}
	if len(holder.lives) > 0 {
		holder.lives[len(holder.lives)-1].end(holder.service, time.Since(began))
	}
	killLock.Lock()
	holder.killed = true
	killLock.Unlock()
	pid := holder.service.PID
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-holder.service.Done()
	time.Sleep(restartAfter)
	holder.restarts++
	if err := holder.start(); err != nil {
		return fmt.Sprintf("SIGKILL pid %d; restart FAILED: %v", pid, err)
	}
	next := &life{pid: holder.service.PID, from: time.Since(began)}
	holder.lives = append(holder.lives, next)
	service := holder.service
	go func() {
		time.Sleep(5 * time.Second)
		rss := service.RSSKiB()
		killLock.Lock()
		next.rssFirst = rss
		killLock.Unlock()
	}()
	return fmt.Sprintf("SIGKILL pid %d (port %d), started again %s later as pid %d", pid, holder.port, restartAfter, holder.service.PID)
}

// rejectedBy is a replica's tributary_cluster_rejected_total by reason.
func rejectedBy(s *harness.Service) map[string]float64 {
	counts := map[string]float64{}
	for _, reason := range []string{"mac", "future", "stale", "replayed", "malformed", "too_large"} {
		if v, ok := s.Metric(`tributary_cluster_rejected_total{reason="` + reason + `"}`); ok {
			counts[reason] = v
		}
	}
	return counts
}

func report(streams *subscribers, load *jsonLoad, forger *forger, leaseTTL, refresh time.Duration, allFresh bool) {
	crashLock.Lock()
	crashed := append([]string(nil), crashes...)
	crashLock.Unlock()
	goalGap := leaseTTL + refresh + time.Second
	gaps := streams.maxGaps()
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	longest := gaps[len(gaps)-1]

	fmt.Println("\nreplicas: each process, RSS once serving (run start, or 5 s after a restart) → at its end (SIGKILL, or run end)")
	killLock.Lock()
	defer killLock.Unlock()
	fmt.Println("| port | pid | lived (s into the run) | RSS first → last (MiB) | growth (MiB) | streams at its end |")
	fmt.Println("|---:|---:|---|---:|---:|---:|")
	for _, r := range replicas {
		for _, l := range r.lives {
			if l.rssFirst == 0 {
				fmt.Printf("| %d | %d | %.0f–%.0f | (ended within 5 s of its start) | | %.0f |\n", r.port, l.pid, l.from.Seconds(), l.to.Seconds(), l.streamsLast)
				continue
			}
			fmt.Printf("| %d | %d | %.0f–%.0f | %.1f → %.1f | %+.1f | %.0f |\n", r.port, l.pid, l.from.Seconds(), l.to.Seconds(),
				float64(l.rssFirst)/1024, float64(l.rssLast)/1024, float64(l.rssLast-l.rssFirst)/1024, l.streamsLast)
		}
	}

	rejected := map[string]float64{}
	for _, r := range replicas {
		for reason, value := range r.rejectedBefore {
			rejected[reason] += value
		}
		for reason, value := range rejectedBy(r.service) {
			rejected[reason] += value
		}
	}
	var dropped []string
	for _, reason := range []string{"mac", "future", "stale", "replayed", "malformed", "too_large"} {
		dropped = append(dropped, fmt.Sprintf("%s %.0f", reason, rejected[reason]))
	}
	fmt.Printf("\nforgeries written to Redis: %s\n", forger.summary())
	fmt.Printf("dropped by the replicas (tributary_cluster_rejected_total): %s\n", strings.Join(dropped, ", "))
	fmt.Printf("subscribers: %d snapshots in the run, %d stream ends and reconnects, every one with a snapshot after the run: %s\n",
		streams.totalSnapshots(), streams.totalReconnects(), harness.Yes(allFresh))
	fmt.Printf("longest gap per subscriber: p50 %s, p99 %s, max %s\n", harness.Percentile(gaps, 50).Round(10*time.Millisecond),
		harness.Percentile(gaps, 99).Round(10*time.Millisecond), longest.Round(10*time.Millisecond))
	fmt.Printf("through nginx: %s\n", load.summary())
	for _, crash := range crashed {
		fmt.Println("CRASH:", crash)
	}

	fmt.Println("\nsummary")
	fmt.Println("| measure | result | goal | met |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| replicas that crashed | %d | 0 | %s |\n", len(crashed), harness.Yes(len(crashed) == 0))
	forged := streams.forgedDelivered()
	fmt.Printf("| forged or invalid documents delivered | %d | 0 | %s |\n", forged, harness.Yes(forged == 0))
	fmt.Printf("| longest gap between snapshots, any subscriber | %s | ≤ %s | %s |\n", longest.Round(10*time.Millisecond), goalGap,
		harness.Yes(longest <= goalGap))
	fmt.Printf("| subscribers receiving after the run | %s | all | %s |\n", harness.Yes(allFresh), harness.Yes(allFresh))
}

// waitFor checks condition every 20 ms until it holds (true) or limit passes (false).
func waitFor(limit time.Duration, condition func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if condition() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeConfig writes the replicas' configuration: one worker, room for every stream, the
// lease TTL, and groups on the tool's upstream.
func writeConfig(upstream string, leaseTTL, refresh time.Duration, connections int) (string, error) {
	return harness.WriteConfig(work.Dir, harness.Config{Tool: "fleet-chaos", UpstreamURL: upstream,
		MaxConnections: connections, MaxSubscribers: connections, LeaseTTL: fmt.Sprintf("%dms", leaseTTL.Milliseconds()),
		Timeout: "5s", Retries: "0", RefreshInterval: fmt.Sprintf("%dms", refresh.Milliseconds())})
}
