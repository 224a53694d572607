// sharing-cost: what the sharing key costs a JSON answer (issues 28 and 29), one run side by
// side, in four phases over one generated configuration:
//
//	a. plain, GET /groups, against param, GET /teams/core/groups: a resource with a path
//	   parameter over the same upstream documents (its list and detail paths carry the value as
//	   an ignored query, /groups?team={team} and /groups/{id}/metadata?team={team}), so the
//	   only difference is the parameter machinery: route match, validation, percent-encoding
//	   into the upstream paths, the key. Goal: param ≥ 97 % of plain.
//	b. forward, GET /me/groups on an upstream with `forward: [Authorization]`, against
//	   noforward, GET /you/groups, the same resource on an upstream without it, both asked with
//	   the same one bearer token: the identity hash, the per-identity key, the forwarded header
//	   on every upstream call, the private answer. Goal: forward ≥ 95 % of noforward.
//
// The demo upstream's 10 groups (`tributary demo-upstream`, both upstreams on it: one
// connection budget of 128), coalescing off (every request its own fetch, as in
// Benchmarks/groups.sh), the access log off. Each round starts a fresh service (-workers),
// checks each path answers 200, warms each for 2 s, waits for a quiet machine, then runs
// `wrk -t2 -c CONNECTIONS -d DURATION --latency` on the four, in reverse order every other
// round, reading the service's CPU time over each. The summary gives medians over the rounds
// of each figure and of each round's ratios, by req/s and by CPU time per request (steadier
// when other work shares the cores).
//
// Then, unless -count 0, instructions and allocations per request, the ratios noise cannot
// move: the service (debug information stripped, one worker) under valgrind's callgrind;
// per phase -count requests one after another on one keep-alive connection to warm up, the
// counters zeroed (callgrind_control -z), -count more, a dump (-d) read by
// Benchmarks/callgrind_counts.py (-counts). Benchmarks/budgets.py reads these `count` lines.
//
//	sharing-cost -bin PATH -counts Benchmarks/callgrind_counts.py [-rounds 3] [-duration 10s]
//	             [-connections 100] [-workers 2] [-count 200]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

// phase is one of the four resources measured, and how it is asked.
type phase struct {
	name, path, header string
}

// token is the one bearer token of the noforward and forward phases.
const token = "Authorization: Bearer bench-user-0001"

var phases = []phase{
	{"plain", "/groups", ""},
	{"param", "/teams/core/groups", ""},
	{"noforward", "/you/groups", token},
	{"forward", "/me/groups", token},
}

// result is one phase of one round.
type result struct {
	rps, p99, cpu float64
	non2xx        int
}

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	countsScript := flag.String("counts", "", "Benchmarks/callgrind_counts.py (required unless -count 0)")
	f := harness.DeclareWrkFlags(true)
	count := flag.Int("count", harness.EnvInt("COUNT", 200), "requests per phase under callgrind; 0 skips the counts (env COUNT)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" || (*count > 0 && *countsScript == "") {
		fmt.Fprintln(os.Stderr, "usage: sharing-cost -bin PATH -counts callgrind_counts.py [-rounds N] [-duration D] [-connections N] [-workers N] [-count N]")
		os.Exit(2)
	}

	work, err := harness.NewWorkspace("sharing-cost", *keep)
	harness.Check(err)
	upstream, err := work.StartDemoUpstream(*bin, "demo-upstream.log")
	work.Check(err)
	// Two upstreams on the one demo origin: tasks, and accounts forwarding Authorization. Four
	// resources that differ only in what is measured; the upstream answers all of them with
	// the same documents.
	config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "sharing-cost", UpstreamURL: "http://" + upstream.Addr,
		PoolSize: 128, Accounts: true, NoCoalescing: true, Lists: []harness.List{
			{Name: "teamgroups", Upstream: "tasks", Route: "/teams/{team}/groups", Team: true,
				List: "/groups?team={team}", Details: "/groups/{id}/metadata?team={team}"},
			{Name: "mygroups", Upstream: "accounts", Route: "/me/groups", List: "/groups", Details: "/groups/{id}/metadata"},
			{Name: "othergroups", Upstream: "tasks", Route: "/you/groups", List: "/groups", Details: "/groups/{id}/metadata"},
		}})
	work.Check(err)

	fmt.Printf("# sharing cost: demo upstream, 10 groups, coalescing off, wrk -t2 -c%d -d%s, %d workers, %d rounds\n",
		f.Connections, f.Duration, f.Workers, f.Rounds)
	results := map[string][]result{}
	for round := 1; round <= f.Rounds; round++ {
		s, err := work.StartServiceWith(harness.ServiceOptions{Bin: *bin, ConfigPath: config, Workers: f.Workers},
			fmt.Sprintf("service-%d.log", round))
		work.Check(err)
		wrk := func(p phase, duration time.Duration) harness.Wrk {
			return harness.Wrk{URL: "http://" + s.Addr + p.path, Threads: 2, Connections: f.Connections, Duration: duration, Header: p.header}
		}
		for _, p := range phases {
			work.Check(oneByOne(s.Addr, p, 1)) // answers 200
			work.Check(harness.RunWrk(wrk(p, 2*time.Second)).Err)
		}
		order := []int{0, 1, 2, 3}
		if round%2 == 0 {
			order = []int{1, 0, 3, 2}
		}
		harness.WaitQuiet(f.QuietMax, f.QuietWait)
		for _, i := range order {
			p := phases[i]
			r, cpu := s.RunWrk(wrk(p, f.Duration))
			work.Check(r.Err)
			fmt.Printf("round %d  %-10s %-20s %10.2f req/s   p99 %6.2fms   non-2xx %d   service CPU %.3f ms/request\n",
				round, p.name, p.path, r.RPS, r.P99, r.Non2xx, cpu)
			results[p.name] = append(results[p.name], result{r.RPS, r.P99, cpu, r.Non2xx})
		}
		s.Stop()
	}

	instructions := map[string]int{}
	if *count > 0 {
		instructions = countInstructions(work, *bin, config, *countsScript, *count)
	}
	if f.Rounds > 0 {
		summarize(results, instructions)
	}
	work.Close()
}

// countInstructions runs the service under callgrind and prints, per phase, its instructions
// and allocations per request; it returns the instructions per request by phase.
func countInstructions(work *harness.Workspace, bin, config, countsScript string, count int) map[string]int {
	s, err := work.StartCallgrind(harness.ServiceOptions{Bin: bin, ConfigPath: config, Workers: 1}, "valgrind.log",
		filepath.Join(work.Dir, "callgrind.out"), countsScript)
	work.Check(err)
	counts := map[string]int{}
	for _, p := range phases {
		work.Check(oneByOne(s.Addr, p, count))
		work.Check(s.Zero())
		work.Check(oneByOne(s.Addr, p, count))
		dump, instructions, allocations, err := s.Dump()
		work.Check(err)
		os.Remove(dump)
		fmt.Printf("count  %-10s %-20s %.0f instructions/request, %.1f allocations/request\n", p.name, p.path,
			float64(instructions)/float64(count), float64(allocations)/float64(count))
		counts[p.name] = int(instructions) / count
	}
	s.Stop()
	return counts
}

// oneByOne asks GET p.path `count` times, one after another on one keep-alive connection,
// with the header lines Python's http.client sends (Host, Accept-Encoding: identity).
func oneByOne(addr string, p phase, count int) error {
	conn, err := harness.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if p.header == "" {
		return conn.GetEach(p.path, count)
	}
	return conn.GetEach(p.path, count, p.header)
}

// summarize prints the medians over the rounds and the ratios of the two comparisons.
func summarize(results map[string][]result, instructions map[string]int) {
	median := func(name string, value func(result) float64) float64 {
		var values []float64
		for _, r := range results[name] {
			values = append(values, value(r))
		}
		return harness.Median(values)
	}
	fmt.Printf("\nmedians over %d rounds\n", len(results["plain"]))
	fmt.Println("| phase | req/s | p99 ms | non-2xx (all rounds) | service CPU per request |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, p := range phases {
		non2xx := 0
		for _, r := range results[p.name] {
			non2xx += r.non2xx
		}
		fmt.Printf("| %s | %.0f | %.1f | %d | %.3f ms |\n", p.name, median(p.name, func(r result) float64 { return r.rps }),
			median(p.name, func(r result) float64 { return r.p99 }), non2xx, median(p.name, func(r result) float64 { return r.cpu }))
	}
	for _, c := range []struct {
		title, measured, base string
		goal                  float64
	}{{"a. /teams/core/groups / /groups", "param", "plain", 97}, {"b. forwarding / not forwarding", "forward", "noforward", 95}} {
		var byRPS, byCPU []float64
		var rpsText, cpuText []string
		for i := range results[c.base] {
			// The cost by CPU: the baseline's CPU per request / the measured one's, in %.
			rps := results[c.measured][i].rps / results[c.base][i].rps * 100
			cpu := results[c.base][i].cpu / results[c.measured][i].cpu * 100
			byRPS, byCPU = append(byRPS, rps), append(byCPU, cpu)
			rpsText, cpuText = append(rpsText, fmt.Sprintf("%.1f", rps)), append(cpuText, fmt.Sprintf("%.1f", cpu))
		}
		met := "met"
		if harness.Median(byRPS) < c.goal {
			met = "NOT met"
		}
		fmt.Printf("%s: %.1f %% of the req/s (rounds: %s; goal ≥ %.0f %%: %s)\n", c.title, harness.Median(byRPS), strings.Join(rpsText, ", "), c.goal, met)
		fmt.Printf("   by service CPU per request: %.1f %% (rounds: %s)\n", harness.Median(byCPU), strings.Join(cpuText, ", "))
		if measured, ok := instructions[c.measured]; ok {
			base := instructions[c.base]
			fmt.Printf("   by instructions per request (callgrind): %.1f %% (%+d instructions, %d against %d)\n",
				float64(base)/float64(measured)*100, measured-base, measured, base)
		}
	}
}
