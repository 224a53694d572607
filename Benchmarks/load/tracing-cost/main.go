// tracing-cost: what tracing costs a JSON answer (issue 40), one run side by side: GET /groups
// (the demo upstream's 10 groups: a SERVER span and 11 CLIENT spans per request) with tracing
// off against every request sampled and exported over OTLP/HTTP to a collector on loopback.
// Goal: on ≥ 90 % of off, by req/s.
//
// The collector is a sink in this process (otlpSink): it reads each export and answers 200, so
// the exporter's real work (protobuf, HTTP) is done; the spans swift-otel dropped, if
// any, are read from /metrics and reported, since a dropped span is work not done. The demo
// upstream (`tributary demo-upstream`) and the collector run for the whole run; each phase
// starts a fresh service (a generated configuration: coalescing off, every request its own
// fetch as in Benchmarks/groups.sh; pool 128; access log off; -workers), warms it with wrk for
// 2 s, waits for a quiet machine, then runs `wrk -t2 -c CONNECTIONS -d DURATION` and reads the
// service's CPU time over it. The phases run in reverse order every other round; the summary
// gives medians over the rounds.
//
//	tracing-cost -bin PATH [-rounds 3] [-duration 10s] [-connections 100] [-workers 2]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"tributary/benchmarks/load/harness"
)

// otlpSink is the collector: on a free loopback port it reads every POST (traces, metrics)
// whole and answers 200 at once, so the service's exporter does its real work and is never
// held up by a slow reader. It counts what it got, for the summary.
type otlpSink struct {
	exports, bytes atomic.Int64
}

func startOTLPSink() (*otlpSink, int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	sink := &otlpSink{}
	go http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		sink.exports.Add(1)
		sink.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	return sink, listener.Addr().(*net.TCPAddr).Port, nil
}

// result is one phase of one round.
type result struct {
	rps, cpu, dropped float64
}

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	f := harness.DeclareWrkFlags(true)
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: tracing-cost -bin PATH [-rounds N] [-duration D] [-connections N] [-workers N]")
		os.Exit(2)
	}

	work, err := harness.NewWorkspace("tracing-cost", *keep)
	harness.Check(err)
	upstream, err := work.StartDemoUpstream(*bin, "demo-upstream.log")
	work.Check(err)
	sink, sinkPort, err := startOTLPSink()
	work.Check(err)
	config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "tracing-cost", UpstreamURL: "http://" + upstream.Addr,
		PoolSize: 128, NoCoalescing: true})
	work.Check(err)

	fmt.Printf("# tracing cost: demo upstream, 10 groups, coalescing off, wrk -t2 -c%d -d%s, %d workers, %d rounds\n",
		f.Connections, f.Duration, f.Workers, f.Rounds)
	results := map[string][]result{}
	for round := 1; round <= f.Rounds; round++ {
		order := []string{"off", "on"}
		if round%2 == 0 {
			order = []string{"on", "off"}
		}
		for _, phase := range order {
			var env []string
			if phase == "on" {
				env = []string{fmt.Sprintf("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", sinkPort)}
			}
			s, err := work.StartServiceWith(harness.ServiceOptions{Bin: *bin, ConfigPath: config, Workers: f.Workers, Env: env},
				fmt.Sprintf("service-%s-%d.log", phase, round))
			work.Check(err)
			wrk := harness.Wrk{URL: "http://" + s.Addr + "/groups", Threads: 2, Connections: f.Connections, Duration: 2 * time.Second}
			work.Check(harness.RunWrk(wrk).Err)
			harness.WaitQuiet(f.QuietMax, f.QuietWait)
			wrk.Duration = f.Duration
			r, cpu := s.RunWrk(wrk)
			work.Check(r.Err)
			dropped := s.MetricSum("tributary_otlp_dropped_spans_total")
			fmt.Printf("round %d  %-4s %10.2f req/s   non-2xx %d   service CPU %.3f ms/request   spans dropped %.0f\n",
				round, phase, r.RPS, r.Non2xx, cpu, dropped)
			results[phase] = append(results[phase], result{r.RPS, cpu, dropped})
			s.Stop()
		}
	}

	median := func(phase string, value func(result) float64) float64 {
		var values []float64
		for _, r := range results[phase] {
			values = append(values, value(r))
		}
		return harness.Median(values)
	}
	rps := func(r result) float64 { return r.rps }
	cpu := func(r result) float64 { return r.cpu }
	var ratios []float64
	var each []string
	for i := range results["off"] {
		ratio := results["on"][i].rps / results["off"][i].rps
		ratios = append(ratios, ratio)
		each = append(each, fmt.Sprintf("%.1f", ratio*100))
	}
	fmt.Printf("median off: %.0f req/s, %.3f ms CPU/request\n", median("off", rps), median("off", cpu))
	fmt.Printf("median on:  %.0f req/s, %.3f ms CPU/request, spans dropped (median) %.0f\n", median("on", rps), median("on", cpu),
		median("on", func(r result) float64 { return r.dropped }))
	fmt.Printf("on/off by req/s: median %.1f %% (rounds: %s); goal >= 90 %%\n", harness.Median(ratios)*100, strings.Join(each, ", "))
	fmt.Printf("the collector got %d exports, %d bytes\n", sink.exports.Load(), sink.bytes.Load())
	work.Close()
}
