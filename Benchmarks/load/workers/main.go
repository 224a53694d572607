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
	"time"

	"tributary/benchmarks/load/harness"
)

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	config := flag.String("config", "", "the shipped configuration, config/tributary.yaml (required)")
	n := flag.Int("n", 10, "groups in the fixture")
	f := harness.DeclareRoundFlags(5)
	flag.Parse()
	if *bin == "" || *config == "" || f.Rounds < 1 {
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
	var urls []string
	for _, t := range targets {
		s, err := work.StartServiceWith(harness.ServiceOptions{Bin: *bin, ConfigPath: *config, Workers: t.workers,
			Args: []string{"--upstream", fmt.Sprintf("tasks=http://127.0.0.1:%d", nginx.Port)}}, t.name+".log")
		work.Check(err)
		urls = append(urls, "http://"+s.Addr+"/groups")
		work.Check(fx.CheckAnswer(s.Addr, 10*time.Second))
	}
	results, err := f.Measure(urls)
	work.Check(err)
	work.Close()
	fmt.Printf("%-10s %10s   %s\n", "workers", "req/s", "rounds")
	for i := range targets {
		fmt.Printf("%-10d %10.0f   %s\n", i+1, harness.Median(results[i]), harness.EachRPS(results[i]))
	}
	fmt.Printf("scaling 1 -> 2 workers: x%.2f\n", harness.Median(results[1])/harness.Median(results[0]))
	fmt.Printf("GET /groups, N=%d, %s; nginx 1 worker; %d cores shared by all\n", *n, f.Method(), runtime.NumCPU())
}
