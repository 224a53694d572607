// fleet: what replicas coordinated through Redis cost and how fast they are, in four phases
// run one after the other against one redis-server and one scripted upstream, every process
// started by this tool and stopped by its PID:
//
//   - calls:    K = 1, 2, 3 replicas, one /groups subscriber on each, refreshing every
//     -refresh: upstream list calls per refresh, read from the snapshots themselves (the
//     upstream names each list after its call), with --redis and, side by side, without.
//     Goal: exactly 1 with Redis.
//
//   - trigger:  three replicas, a /rows stream on A; -triggers times POST
//     /streams/{id}/triggers/reload on B (cross-replica) and as many on A (same replica),
//     interleaved: time from sending to the new snapshot on A's stream. Goal: cross p99 ≤ 10 ms.
//
//   - failover: three replicas (leaseTTL -lease-ttl, refresh -failover-refresh), a /groups
//     subscriber on each; -kills times SIGKILL the lease holder and time until every survivor's
//     subscriber has a snapshot from a list call made after the kill; then a new replica takes
//     the dead one's place. Goal: max ≤ leaseTTL + refresh + 1 s.
//
//   - scale:    three replicas, -subscribers /groups subscribers spread over them (one epoll
//     loop, harness.SSEClients); -updates times raise the upstream's version and POST
//     /groups/reload to one replica in turn: time until each subscriber has the new
//     version. Goal: p99 ≤ 300 ms.
//
//     fleet -bin .build/release/tributary [-phases calls,trigger,failover,scale] [-kills 20] [-triggers 1000] [-subscribers 10000]
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

var (
	bin       string
	work      *harness.Workspace
	up        *harness.Upstream
	redis     *harness.Redis
	quietMax  int
	quietWait time.Duration
	started   int // replicas started so far, for their log names
)

// goals collects the summary's rows as the phases report them.
var goals [][4]string

func goal(measure, result, target string, met bool) {
	goals = append(goals, [4]string{measure, result, target, harness.Yes(met)})
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("fleet: ")
	flag.StringVar(&bin, "bin", "", "the tributary binary (required)")
	phases := flag.String("phases", "calls,trigger,failover,scale", "which phases, comma-separated")
	groups := flag.Int("groups", 10, "groups in the upstream's list (one metadata call each per refresh)")
	refresh := flag.Duration("refresh", 300*time.Millisecond, "calls: the refresh interval")
	refreshes := flag.Int("refreshes", 20, "calls: refreshes counted for each K")
	triggers := flag.Int("triggers", 1000, "trigger: cross-replica triggers timed (and as many on the same replica)")
	kills := flag.Int("kills", 20, "failover: lease holders killed")
	leaseTTL := flag.Duration("lease-ttl", 3*time.Second, "failover: cluster.leaseTTL")
	failoverRefresh := flag.Duration("failover-refresh", time.Second, "failover: the refresh interval")
	subscribers := flag.Int("subscribers", 10000, "scale: subscribers spread over the three replicas")
	updates := flag.Int("updates", 5, "scale: updates timed")
	keep := flag.Bool("keep", false, "keep the work directory (configurations, logs)")
	flag.IntVar(&quietMax, "quiet-max", harness.EnvInt("QUIET_MAX", 15), "before each phase, wait until the machine is at most this % busy (env QUIET_MAX)")
	flag.DurationVar(&quietWait, "quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 300))*time.Second, "but no longer than this (env QUIET_WAIT, seconds)")
	flag.Parse()
	if bin == "" {
		fmt.Fprintln(os.Stderr, "usage: fleet -bin PATH [-phases calls,trigger,failover,scale] [flags]")
		os.Exit(2)
	}
	harness.Check(harness.RaiseFileLimit(*subscribers + 1000))

	var err error
	work, err = harness.NewWorkspace("fleet", *keep)
	harness.Check(err)
	// Every refresh a new snapshot that names its list call; every group's metadata the
	// version, which the tool raises before each timed update; a /rows reload a new snapshot.
	up, err = harness.StartUpstream(harness.UpstreamOptions{Groups: *groups, Changing: *groups,
		NameListCalls: true, Topics: []string{"t1"}, Medias: 1, NameTopicCalls: true})
	work.Check(err)
	redis, err = work.StartRedis()
	work.Check(err)
	fmt.Printf("fleet: redis-server pid %d on port %d, upstream %s, %d groups, binary %s\n", redis.PID(), redis.Port, up.URL, *groups, bin)

	for _, phase := range strings.Split(*phases, ",") {
		harness.WaitQuiet(quietMax, quietWait)
		switch phase {
		case "calls":
			work.Check(callsPhase(*refresh, *refreshes))
		case "trigger":
			work.Check(triggerPhase(*triggers))
		case "failover":
			work.Check(failoverPhase(*kills, *leaseTTL, *failoverRefresh))
		case "scale":
			work.Check(scalePhase(*subscribers, *updates))
		default:
			work.Check(fmt.Errorf("unknown phase %q", phase))
		}
	}

	fmt.Println("\nsummary")
	fmt.Println("| measure | result | goal | met |")
	fmt.Println("|---|---|---|---|")
	for _, row := range goals {
		fmt.Printf("| %s | %s | %s | %s |\n", row[0], row[1], row[2], row[3])
	}
	work.Close()
}

// MARK: - Replicas

// writeConfig writes a configuration for replicas of this tool: one worker, the groups
// (list) and rows (pages) resources on the tool's upstream, `cluster.leaseTTL` when
// leaseTTL is not zero (the Redis comes from --redis).
func writeConfig(name string, refresh, leaseTTL time.Duration, maxSubscribers int) (string, error) {
	lease := ""
	if leaseTTL > 0 {
		lease = fmt.Sprintf("%dms", leaseTTL.Milliseconds())
	}
	// Every subscriber is one client (loopback): no per-client bound of the service applies.
	return harness.WriteConfig(work.Dir, harness.Config{Tool: "fleet", File: name + ".yaml", UpstreamURL: up.URL,
		MaxConnections: maxSubscribers + 2000, MaxSubscribers: maxSubscribers, LeaseTTL: lease,
		Timeout: "5s", Retries: "0", RefreshInterval: fmt.Sprintf("%dms", refresh.Milliseconds()), Rows: true})
}

// startReplica starts one replica (one worker, log level warning), in the fleet when
// clustered: it returns once the replica says it is connected to Redis.
func startReplica(config string, clustered bool) (*harness.Service, error) {
	started++
	var args, env []string
	if clustered {
		args = []string{"--redis", redis.URL}
		env = []string{"TRIBUTARY_CLUSTER_SECRET=" + harness.FleetSecret}
	}
	s, err := work.StartServiceWith(harness.ServiceOptions{Bin: bin, ConfigPath: config, Workers: 1, Args: args, Env: env},
		fmt.Sprintf("replica-%d.log", started))
	if err != nil || !clustered {
		return s, err
	}
	if !waitFor(10*time.Second, func() bool { v, ok := s.Metric("tributary_cluster_connected"); return ok && v == 1 }) {
		return s, fmt.Errorf("replica pid %d did not join the fleet within 10 s: %s", s.PID, s.LogTail())
	}
	return s, nil
}

func stopAll(replicas []*harness.Service) {
	for _, s := range replicas {
		s.Stop()
	}
}

// leaders is the indexes of the live replicas holding the lease of groups.
func leaders(replicas []*harness.Service) []int {
	var holding []int
	for index, s := range replicas {
		if s.Alive() {
			if v, ok := s.Metric(`tributary_cluster_lease_held{resource="groups"}`); ok && v == 1 {
				holding = append(holding, index)
			}
		}
	}
	return holding
}

// waitFor checks condition every 20 ms until it holds (true) or limit passes (false): for
// states only /metrics tells.
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

// MARK: - Phase: list calls per refresh

func callsPhase(refresh time.Duration, refreshes int) error {
	fmt.Printf("\n== calls: upstream list calls per refresh, K replicas each with a /groups subscriber, refresh %s, %d refreshes counted\n", refresh, refreshes)
	fleetConfig, err := writeConfig("calls-fleet", refresh, 3*time.Second, 1000)
	if err != nil {
		return err
	}
	aloneConfig, err := writeConfig("calls-alone", refresh, 0, 1000)
	if err != nil {
		return err
	}
	fmt.Println("| K | mode | list calls per refresh | refreshes seen by every subscriber |")
	fmt.Println("|---:|---|---:|---:|")
	var fleetResults []string
	allOne := true
	for k := 1; k <= 3; k++ {
		for _, clustered := range []bool{true, false} {
			config, mode := aloneConfig, "alone (no --redis)"
			if clustered {
				config, mode = fleetConfig, "fleet (--redis)"
			}
			perRefresh, shared, err := countCalls(config, clustered, k, refreshes, refresh)
			if err != nil {
				return err
			}
			fmt.Printf("| %d | %s | %.2f | %d of %d |\n", k, mode, perRefresh, shared, refreshes)
			if clustered {
				fleetResults = append(fleetResults, fmt.Sprintf("%.2f", perRefresh))
				allOne = allOne && perRefresh == 1 && shared == refreshes
			}
		}
	}
	goal("upstream list calls per refresh, K = 1, 2, 3 replicas subscribed", strings.Join(fleetResults, ", "), "exactly 1", allOne)
	return nil
}

// countCalls runs k replicas with a subscriber each and returns the list calls per refresh
// seen by the first subscriber (the list call numbers its snapshots show, first to last,
// over the refreshes) and how many of those snapshots every other subscriber saw too.
func countCalls(config string, clustered bool, k, refreshes int, refresh time.Duration) (float64, int, error) {
	var replicas []*harness.Service
	defer func() { stopAll(replicas) }()
	var streams []*stream
	defer func() {
		for _, s := range streams {
			s.close()
		}
	}()
	for i := 0; i < k; i++ {
		s, err := startReplica(config, clustered)
		if err != nil {
			return 0, 0, err
		}
		replicas = append(replicas, s)
		st, err := openStream(s.Port, "/groups")
		if err != nil {
			return 0, 0, err
		}
		streams = append(streams, st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, st := range streams {
		if _, err := st.nextSnapshot(deadline); err != nil {
			return 0, 0, fmt.Errorf("first snapshot: %w", err)
		}
	}
	if clustered && !waitFor(10*time.Second, func() bool { return len(leaders(replicas)) == 1 }) {
		return 0, 0, fmt.Errorf("no single lease holder among %d replicas", k)
	}
	// Settle: the leader's first state has reached everyone; count from the next snapshot.
	time.Sleep(2 * refresh)
	for _, st := range streams {
		st.drain()
	}
	limit := time.Now().Add(time.Duration(refreshes+5)*refresh*3 + 10*time.Second)
	var calls []int64
	for len(calls) <= refreshes {
		e, err := streams[0].nextSnapshot(limit)
		if err != nil {
			return 0, 0, fmt.Errorf("counting refreshes: %w", err)
		}
		calls = append(calls, listCall(e))
	}
	perRefresh := float64(calls[len(calls)-1]-calls[0]) / float64(refreshes)
	// What the others saw meanwhile (their events wait in their channels), up to a
	// snapshot as recent as the first subscriber's last.
	shared := refreshes
	last := calls[len(calls)-1]
	for _, st := range streams[1:] {
		seen := map[int64]bool{}
		for {
			e, err := st.next(time.Now().Add(3 * refresh))
			if err != nil {
				break
			}
			if e.kind == "snapshot" {
				seen[listCall(e)] = true
				if listCall(e) >= last {
					break
				}
			}
		}
		count := 0
		for _, call := range calls[1:] {
			if seen[call] {
				count++
			}
		}
		if count < shared {
			shared = count
		}
	}
	return perRefresh, shared, nil
}

// MARK: - Phase: cross-replica trigger latency

func triggerPhase(triggers int) error {
	fmt.Printf("\n== trigger: POST /streams/{id}/triggers/reload on replica B (cross) or A (same), new snapshot on A's /rows stream; %d of each, interleaved\n", triggers)
	config, err := writeConfig("trigger", time.Hour, 3*time.Second, 1000)
	if err != nil {
		return err
	}
	var replicas []*harness.Service
	defer func() { stopAll(replicas) }()
	for i := 0; i < 3; i++ {
		s, err := startReplica(config, true)
		if err != nil {
			return err
		}
		replicas = append(replicas, s)
	}
	a, b := replicas[0], replicas[1]
	rows, err := openStream(a.Port, "/rows")
	if err != nil {
		return err
	}
	defer rows.close()
	if _, err := rows.nextSnapshot(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	trigger := func(target *harness.Service) (answered, arrived time.Duration, err error) {
		rows.drain()
		sent := time.Now()
		response, err := client.Post(fmt.Sprintf("http://%s/streams/%s/triggers/reload", target.Addr, rows.id), "text/plain", nil)
		if err != nil {
			return 0, 0, err
		}
		response.Body.Close()
		answered = time.Since(sent)
		if response.StatusCode != 202 {
			return 0, 0, fmt.Errorf("trigger on port %d: status %d", target.Port, response.StatusCode)
		}
		e, err := rows.nextSnapshot(sent.Add(5 * time.Second))
		if err != nil {
			return 0, 0, fmt.Errorf("trigger on port %d: %w", target.Port, err)
		}
		return answered, e.at.Sub(sent), nil
	}
	for i := 0; i < 50; i++ { // warm-up: connections, code paths
		if _, _, err := trigger(replicas[i%2]); err != nil {
			return err
		}
	}
	var cross, same, crossAnswer, sameAnswer []time.Duration
	for i := 0; i < 2*triggers; i++ {
		if i%2 == 0 {
			answered, arrived, err := trigger(b)
			if err != nil {
				return err
			}
			cross, crossAnswer = append(cross, arrived), append(crossAnswer, answered)
		} else {
			answered, arrived, err := trigger(a)
			if err != nil {
				return err
			}
			same, sameAnswer = append(same, arrived), append(sameAnswer, answered)
		}
	}
	fmt.Println("| trigger sent to | n | snapshot on A: p50 | p99 | max | 202 answered: p50 | p99 |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, row := range []struct {
		name             string
		arrived, answers []time.Duration
	}{{"B (another replica)", cross, crossAnswer}, {"A (the stream's replica)", same, sameAnswer}} {
		sortDurations(row.arrived)
		sortDurations(row.answers)
		fmt.Printf("| %s | %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n", row.name, len(row.arrived),
			ms(harness.Percentile(row.arrived, 50)), ms(harness.Percentile(row.arrived, 99)), ms(row.arrived[len(row.arrived)-1]),
			ms(harness.Percentile(row.answers, 50)), ms(harness.Percentile(row.answers, 99)))
	}
	p99 := harness.Percentile(cross, 99)
	goal(fmt.Sprintf("cross-replica trigger → event, p50 / p99 over %d", len(cross)),
		fmt.Sprintf("%.2f / %.2f ms", ms(harness.Percentile(cross, 50)), ms(p99)), "p99 ≤ 10 ms", p99 <= 10*time.Millisecond)
	return nil
}

// MARK: - Phase: failover

func failoverPhase(kills int, leaseTTL, refresh time.Duration) error {
	bound := leaseTTL + refresh + time.Second
	fmt.Printf("\n== failover: SIGKILL of the lease holder, %d times; leaseTTL %s, refresh %s (bound %s)\n", kills, leaseTTL, refresh, bound)
	config, err := writeConfig("failover", refresh, leaseTTL, 1000)
	if err != nil {
		return err
	}
	replicas := make([]*harness.Service, 3)
	streams := make([]*stream, 3)
	defer func() {
		for _, st := range streams {
			if st != nil {
				st.close()
			}
		}
		stopAll(replicas)
	}()
	// join starts a replica in slot i with its subscriber and waits for its first snapshot.
	join := func(i int) error {
		s, err := startReplica(config, true)
		if err != nil {
			return err
		}
		replicas[i] = s
		if streams[i], err = openStream(s.Port, "/groups"); err != nil {
			return err
		}
		_, err = streams[i].nextSnapshot(time.Now().Add(10 * time.Second))
		return err
	}
	for i := range replicas {
		if err := join(i); err != nil {
			return err
		}
	}
	fmt.Println("| kill | leader pid | first survivor's new snapshot | last survivor's | errors on survivors |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	var lasts []time.Duration
	for kill := 1; kill <= kills; kill++ {
		var holding []int
		if !waitFor(3*leaseTTL+5*time.Second, func() bool { holding = leaders(replicas); return len(holding) == 1 }) {
			return fmt.Errorf("kill %d: no single lease holder (%v)", kill, holding)
		}
		leader := holding[0]
		// One refresh by this leader reached everyone: a steady fleet before the kill.
		for _, st := range streams {
			st.drain()
		}
		for i, st := range streams {
			if i != leader {
				if _, err := st.nextSnapshot(time.Now().Add(3 * refresh)); err != nil {
					return fmt.Errorf("kill %d: before the kill: %w", kill, err)
				}
			}
		}
		before := up.ListCalls.Load()
		pid := replicas[leader].PID
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return err
		}
		killed := time.Now()
		var first, last time.Duration
		errors := 0
		for i, st := range streams {
			if i == leader {
				continue
			}
			for {
				e, err := st.next(killed.Add(bound + 10*time.Second))
				if err != nil {
					return fmt.Errorf("kill %d: survivor %d: %w", kill, i, err)
				}
				if e.kind == "error" {
					errors++
				}
				if e.kind == "snapshot" && listCall(e) > before {
					took := e.at.Sub(killed)
					if first == 0 || took < first {
						first = took
					}
					if took > last {
						last = took
					}
					break
				}
			}
		}
		lasts = append(lasts, last)
		fmt.Printf("| %d | %d | %.0f ms | %.0f ms | %d |\n", kill, pid, ms(first), ms(last), errors)
		<-replicas[leader].Done()
		streams[leader].close()
		if err := join(leader); err != nil {
			return err
		}
	}
	sorted := append([]time.Duration(nil), lasts...)
	sortDurations(sorted)
	worst := sorted[len(sorted)-1]
	fmt.Printf("failover (last survivor): median %.0f ms, max %.0f ms over %d kills; bound %s\n", ms(harness.Percentile(sorted, 50)), ms(worst), len(sorted), bound)
	goal(fmt.Sprintf("failover after SIGKILL of the lease holder, median / max over %d kills (leaseTTL %s, refresh %s)", len(sorted), leaseTTL, refresh),
		fmt.Sprintf("%.2f / %.2f s", harness.Percentile(sorted, 50).Seconds(), worst.Seconds()), fmt.Sprintf("max ≤ %s", bound), worst <= bound)
	return nil
}

// MARK: - Phase: 10,000 subscribers over three replicas

func scalePhase(count, updates int) error {
	fmt.Printf("\n== scale: %d /groups subscribers over three replicas, %d updates (POST /groups/reload to each replica in turn)\n", count, updates)
	config, err := writeConfig("scale", time.Hour, 3*time.Second, count)
	if err != nil {
		return err
	}
	var replicas []*harness.Service
	defer func() { stopAll(replicas) }()
	var ports []int
	for i := 0; i < 3; i++ {
		s, err := startReplica(config, true)
		if err != nil {
			return err
		}
		replicas = append(replicas, s)
		ports = append(ports, s.Port)
	}
	c, err := harness.NewSSEClients(ports, []string{"/groups"}, count, 256)
	if err != nil {
		return err
	}
	defer c.CloseAll()
	connecting := time.Now()
	ok, err := c.Run(connecting.Add(180*time.Second), func() bool { return c.Next == count && c.FirstSnapshots+c.Lost >= count })
	if err != nil {
		return err
	}
	if !ok || c.Lost > 0 {
		return fmt.Errorf("%d of %d subscribers had a snapshot after 180 s, %d lost", c.FirstSnapshots, count, c.Lost)
	}
	fmt.Printf("connected in %.1f s; RSS of the replicas: %s\n", time.Since(connecting).Seconds(), rss(replicas))
	c.Run(time.Now().Add(2*time.Second), func() bool { return false }) // settle, still reading
	holding := leaders(replicas)
	fmt.Println("| update | reload sent to | p50 | p99 | max | p99 on the leader's subscribers | p99 on the followers' | missed |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|")
	reloader := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var p99s []float64
	missedTotal := 0
	for round := 0; round < updates; round++ {
		version := up.Version.Add(1)
		c.Target, c.Reached = version, 0
		target := replicas[round%len(replicas)]
		sent := time.Now()
		go func() {
			if response, err := reloader.Post("http://"+target.Addr+"/groups/reload", "text/plain", nil); err == nil {
				response.Body.Close()
			}
		}()
		c.Run(sent.Add(30*time.Second), func() bool { return c.Reached+c.Lost >= count })
		var all, onLeader, onFollowers []time.Duration
		missed := 0
		for _, sub := range c.Subs {
			if sub.State == harness.StClosed || sub.Version != version {
				missed++
				continue
			}
			latency := sub.Arrived.Sub(sent)
			all = append(all, latency)
			if len(holding) == 1 && sub.Port == replicas[holding[0]].Port {
				onLeader = append(onLeader, latency)
			} else {
				onFollowers = append(onFollowers, latency)
			}
		}
		missedTotal += missed
		for _, list := range [][]time.Duration{all, onLeader, onFollowers} {
			sortDurations(list)
		}
		if len(all) == 0 {
			return fmt.Errorf("update %d reached nobody", round+1)
		}
		p99 := harness.Percentile(all, 99)
		p99s = append(p99s, ms(p99))
		fmt.Printf("| %d | replica %d | %.1f ms | %.1f ms | %.1f ms | %s | %s | %d |\n", round+1, round%len(replicas)+1,
			ms(harness.Percentile(all, 50)), ms(p99), ms(all[len(all)-1]), p99Text(onLeader), p99Text(onFollowers), missed)
		c.Run(time.Now().Add(time.Second), func() bool { return false })
	}
	fmt.Printf("RSS of the replicas after the updates: %s\n", rss(replicas))
	sort.Float64s(p99s)
	median := p99s[len(p99s)/2]
	goal(fmt.Sprintf("%d subscribers over 3 replicas: one update reaches all, p99 (median of %d updates)", count, updates),
		fmt.Sprintf("%.0f ms", median), "≤ 300 ms", median <= 300 && missedTotal == 0)
	return nil
}

func p99Text(list []time.Duration) string {
	if len(list) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms (%d)", ms(harness.Percentile(list, 99)), len(list))
}

func rss(replicas []*harness.Service) string {
	var parts []string
	for _, s := range replicas {
		parts = append(parts, fmt.Sprintf("%.0f MiB", float64(s.RSSKiB())/1024))
	}
	return strings.Join(parts, ", ")
}

func sortDurations(list []time.Duration) {
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
}

func ms(d time.Duration) float64 { return harness.Milliseconds(d) }
