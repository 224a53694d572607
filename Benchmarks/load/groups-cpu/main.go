// Command groups-cpu measures what one GET /groups request costs the release build (or the Go
// peer of ../shared/bench), read from CPU time or instruction counts rather than wall clock:
// the static nginx fixture of N groups (harness/static.go), the shipped configuration as
// Benchmarks/coalesce-config.sh derives it (-config-script; COALESCE, BATCH and BATCH_WINDOW
// in the environment are its), and
//
//	-mode cpu        utime+stime of the server over a wrk run (-t2 -c64, -span seconds, after
//	                 2 s unreported), divided by the requests wrk counted
//	-mode callgrind  instructions and allocations per request under callgrind (one worker,
//	                 wrk -t1 -c4 for -span seconds, counters zeroed after 5 s of warm-up)
//	-mode count      the same counts over exactly -span requests sent one after another on
//	                 one keep-alive connection (after as many to warm up, on another): no
//	                 timing in it, so the same binary gives the same figures
//
// The counts are read by Benchmarks/callgrind_counts.py (-counts) from callgrind's dump, kept
// at -profile (…​.N) for callgrind_annotate; Benchmarks/budgets.py reads the `count` line and
// the `profile:` line. Benchmarks/groups-cpu.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"tributary/benchmarks/load/harness"
)

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	mode := flag.String("mode", "", "cpu, callgrind or count (required)")
	n := flag.Int("n", 0, "groups in the fixture (required)")
	span := flag.Int("span", 0, "seconds of wrk (cpu: 5, callgrind: 20), or requests (count: 200)")
	target := flag.String("target", harness.EnvString("TARGET", "tributary"), "cpu mode: tributary or go (env TARGET)")
	goPeer := flag.String("go-peer", harness.EnvString("GO_PEER", "/tmp/tributary-bench/peers/go/peer-go"), "the Go peer's binary (env GO_PEER)")
	workers := flag.Int("workers", harness.EnvInt("WORKERS", 0), "cpu mode: the service's workers; 0: the configuration's, auto (env WORKERS)")
	coalesce := flag.String("coalesce", harness.EnvString("COALESCE", "off"), "coalescing on or off (env COALESCE)")
	configScript := flag.String("config-script", "", "Benchmarks/coalesce-config.sh (required)")
	counts := flag.String("counts", "", "Benchmarks/callgrind_counts.py (required for callgrind and count)")
	profile := flag.String("profile", harness.EnvString("CALLGRIND_OUT", "/tmp/groups-callgrind.out"), "where callgrind writes (env CALLGRIND_OUT)")
	flag.Parse()
	defaults := map[string]int{"cpu": 5, "callgrind": 20, "count": 200}
	if _, ok := defaults[*mode]; !ok || *bin == "" || *n < 1 || *configScript == "" || (*mode != "cpu" && *counts == "") ||
		(*target != "tributary" && !(*target == "go" && *mode == "cpu")) {
		fmt.Fprintln(os.Stderr, "usage: groups-cpu -bin PATH -config-script coalesce-config.sh -counts callgrind_counts.py -mode cpu|callgrind|count -n N [-span S] [-target tributary|go]")
		os.Exit(2)
	}
	if *span == 0 {
		*span = defaults[*mode]
	}
	work, err := harness.NewWorkspace("groups-cpu", false)
	harness.Check(err)
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, "fixture"), *n)
	work.Check(err)
	nginx, err := work.StartStaticUpstream("nginx", fx, harness.StaticOptions{})
	work.Check(err)
	upstream := fmt.Sprintf("http://127.0.0.1:%d", nginx.Port)
	config := filepath.Join(work.Dir, "tributary.yaml")
	out, err := exec.Command(*configScript, *coalesce).Output()
	work.Check(err)
	work.Check(os.WriteFile(config, out, 0o644))
	options := harness.ServiceOptions{Bin: *bin, ConfigPath: config, Args: []string{"--upstream", "tasks=" + upstream}}

	var server *harness.Service
	var counter *harness.Callgrind
	switch {
	case *mode == "cpu" && *target == "go":
		port, err := harness.FreePort()
		work.Check(err)
		server, err = work.StartProcess("peer-go.log", port, *goPeer, "--port", fmt.Sprint(port), "--upstream", upstream, "--pool", "128")
		work.Check(err)
	case *mode == "cpu":
		options.Workers = *workers
		server, err = work.StartServiceWith(options, "tributary.log")
		work.Check(err)
	default:
		options.Workers = 1
		counter, err = work.StartCallgrind(options, "valgrind.log", *profile, *counts)
		work.Check(err)
		server = counter.Service
	}
	work.Check(fx.CheckAnswer(server.Addr, time.Minute))

	url := "http://" + server.Addr + "/groups"
	wrk := func(threads, connections, seconds int) harness.WrkResult {
		r := harness.RunWrk(harness.Wrk{URL: url, Threads: threads, Connections: connections, Duration: time.Duration(seconds) * time.Second})
		work.Check(r.Err)
		return r
	}
	switch *mode {
	case "cpu":
		wrk(2, 64, 2)
		user0, system0 := harness.ProcessCPU(server.PID)
		r := wrk(2, 64, *span)
		user1, system1 := harness.ProcessCPU(server.PID)
		perRequest := func(ticks int) float64 { return float64(ticks) * 10 / float64(r.Requests) }
		fmt.Printf("%s N=%d: %d requests in %ds (%.0f req/s), CPU %.3f ms/request (user %.3f, kernel %.3f)\n", *target, *n, r.Requests, *span,
			float64(r.Requests)/float64(*span), perRequest(user1-user0+system1-system0), perRequest(user1-user0), perRequest(system1-system0))
	case "callgrind":
		wrk(1, 4, 5)
		work.Check(counter.Zero())
		r := wrk(1, 4, *span)
		report(work, counter, *mode, *n, r.Requests)
	case "count":
		for phase := 0; phase < 2; phase++ {
			if phase == 1 {
				work.Check(counter.Zero())
			}
			conn, err := harness.Dial(server.Addr)
			work.Check(err)
			work.Check(conn.GetEach("/groups", *span))
			conn.Close()
		}
		report(work, counter, *mode, *n, *span)
	}
	work.Close()
}

// report prints the counts of callgrind's dump per request, and where the dump is.
func report(work *harness.Workspace, counter *harness.Callgrind, mode string, n, requests int) {
	dump, instructions, allocations, err := counter.Dump()
	work.Check(err)
	fmt.Printf("%s N=%d: %d requests, %.0f instructions/request, %.1f allocations/request\n", mode, n, requests,
		float64(instructions)/float64(requests), float64(allocations)/float64(requests))
	fmt.Printf("profile: %s (callgrind_annotate --inclusive=yes %s)\n", dump, dump)
}
