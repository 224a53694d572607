// Command workers measures worker scaling: GET /groups from Tributary with one worker and with
// two, side by side in one run against the same static nginx fixture (harness/static.go, N
// groups, no delay), with wrk; medians of -rounds interleaved rounds, and the ratio two/one.
// Both run the shipped configuration (-config; poolSize 128 for the process, so two workers
// hold 64 each) and the access log off. Each service's answer is checked against the
// fixture's expected.json first; each measured wrk run follows 2 s unreported.
// Benchmarks/workers.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	config := flag.String("config", "", "the shipped configuration, config/tributary.yaml (required)")
	n := flag.Int("n", 10, "groups in the fixture")
	rounds := flag.Int("rounds", harness.EnvInt("ROUNDS", 5), "interleaved rounds (env ROUNDS)")
	duration := flag.Duration("duration", harness.EnvDuration("DURATION", 10*time.Second), "wrk -d of a measured run (env DURATION)")
	connections := flag.Int("connections", harness.EnvInt("CONNECTIONS", 64), "wrk -c (env CONNECTIONS)")
	flag.Parse()
	if *bin == "" || *config == "" || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: workers -bin PATH -config config/tributary.yaml [-n N] [-rounds R] [-duration D] [-connections C]")
		os.Exit(2)
	}
	work, err := harness.NewWorkspace("workers", false)
	harness.Check(err)
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, "fixtures"), *n)
	work.Check(err)
	nginx, err := work.StartStaticUpstream("nginx", fx, harness.StaticOptions{})
	work.Check(err)
	targets := []struct {
		name    string
		workers int
	}{{"one", 1}, {"two", 2}}
	urls := map[string]string{}
	for _, t := range targets {
		s, err := work.StartServiceWith(harness.ServiceOptions{Bin: *bin, ConfigPath: *config, Workers: t.workers,
			Args: []string{"--upstream", fmt.Sprintf("tasks=http://127.0.0.1:%d", nginx.Port)}}, t.name+".log")
		work.Check(err)
		urls[t.name] = "http://" + s.Addr + "/groups"
		work.Check(fx.CheckAnswer(s.Addr, 10*time.Second))
	}
	results := map[string][]float64{}
	for round := 1; round <= *rounds; round++ {
		for _, t := range targets {
			harness.RunWrk(harness.Wrk{URL: urls[t.name], Threads: 2, Connections: *connections, Duration: 2 * time.Second})
			r := harness.RunWrk(harness.Wrk{URL: urls[t.name], Threads: 2, Connections: *connections, Duration: *duration})
			work.Check(r.Err)
			results[t.name] = append(results[t.name], r.RPS)
		}
	}
	work.Close()
	one, two := harness.Median(results["one"]), harness.Median(results["two"])
	fmt.Printf("%-10s %10s   %s\n", "workers", "req/s", "rounds")
	for i, t := range targets {
		var rounds []string
		for _, rps := range results[t.name] {
			rounds = append(rounds, fmt.Sprintf("%.2f", rps))
		}
		fmt.Printf("%-10d %10.0f   %s\n", i+1, harness.Median(results[t.name]), strings.Join(rounds, " "))
	}
	fmt.Printf("scaling 1 -> 2 workers: x%.2f\n", two/one)
	fmt.Printf("GET /groups, N=%d, wrk -t2 -c%d -d%s, %d interleaved rounds, medians; nginx 1 worker; %d cores shared by all\n",
		*n, *connections, *duration, *rounds, runtime.NumCPU())
}
