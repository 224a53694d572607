// Command batching runs batched details side by side in one run (DESIGN part 3, "Batched
// details"): GET /groups over the static nginx fixture (harness/static.go), N groups, every
// target measured by ../shared/bench's own run.sh (-bench; the same wrk settings as
// Benchmarks/groups.sh, each body checked against expected.json):
//
//	unbatched   Tributary, one detail call per item                    (N+1 calls per answer)
//	batched     Tributary, details.batch max: MAX                      (1 + ⌈N/MAX⌉)
//	windowed    Tributary, details.batch max: MAX, batchWindow: WINDOW (fewer: concurrent
//	            requests share batch calls)
//	go          the Go peer of ../shared/bench (no batching: N+1 calls per answer, always)
//
// then the latency phase (wrk -c8) against a delayed upstream (nginx's echo_sleep). Every
// Tributary runs the shipped configuration as Benchmarks/coalesce-config.sh derives it
// (-config-script) with coalescing off (the peers do not coalesce): requests share nothing
// but batch windows. After each phase it prints, per Tributary, the upstream calls and detail
// calls per answer, read from its /metrics before and after
// (`tributary_upstream_request_duration_seconds_count`, `tributary_detail_batches_total`,
// `tributary_http_requests_total{route="/groups"}`). Benchmarks/batching.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"tributary/benchmarks/load/harness"
)

var work *harness.Workspace

type options struct {
	bin, bench, goPeer, configScript, window string
	n, max, rounds, quietMax                 int
	delay, duration, quietWait               time.Duration
}

type target struct {
	name, batch, window string // batch "": unbatched; name "go": the Go peer
	service             *harness.Service
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "the tributary binary (required)")
	flag.StringVar(&o.bench, "bench", "", "../shared/bench: its run.sh measures, its peers/go is the Go peer (required)")
	flag.StringVar(&o.goPeer, "go-peer", "", "the Go peer's binary, built from -bench's peers/go when missing (required)")
	flag.StringVar(&o.configScript, "config-script", "", "Benchmarks/coalesce-config.sh (required)")
	flag.IntVar(&o.n, "n", 100, "groups in the fixture")
	flag.DurationVar(&o.delay, "delay", 20*time.Millisecond, "the latency phase's upstream delay")
	flag.IntVar(&o.max, "max", harness.EnvInt("MAX", 50), "details.batch max: one of the fixture's batch sizes, 1 5 10 20 25 50 100 200 (env MAX)")
	flag.StringVar(&o.window, "window", harness.EnvString("WINDOW", "2ms"), "the windowed target's batchWindow (env WINDOW)")
	flag.DurationVar(&o.duration, "duration", harness.EnvDuration("DURATION", 10*time.Second), "run.sh -d (env DURATION)")
	flag.IntVar(&o.rounds, "rounds", harness.EnvInt("ROUNDS", 1), "run.sh --rounds (env ROUNDS)")
	flag.IntVar(&o.quietMax, "quiet-max", harness.EnvInt("QUIET_MAX", 15), "before each phase, wait until the machine is at most this % busy (env QUIET_MAX)")
	flag.DurationVar(&o.quietWait, "quiet-wait", time.Duration(harness.EnvInt("QUIET_WAIT", 600))*time.Second, "… at most this long (env QUIET_WAIT, in seconds)")
	flag.Parse()
	if o.bin == "" || o.bench == "" || o.goPeer == "" || o.configScript == "" {
		fmt.Fprintln(os.Stderr, "usage: batching -bin PATH -bench ../shared/bench -go-peer PATH -config-script coalesce-config.sh [-n N] [-delay D] [-max M] [-window W]")
		os.Exit(2)
	}
	var err error
	work, err = harness.NewWorkspace("batching", false)
	harness.Check(err)
	work.Check(buildGoPeer(o))
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, "fixture"), o.n)
	work.Check(err)
	targets := []*target{{name: "unbatched"}, {name: "batched", batch: fmt.Sprint(o.max)},
		{name: "windowed", batch: fmt.Sprint(o.max), window: o.window}, {name: "go"}}
	for _, t := range targets[:3] {
		command := exec.Command(o.configScript, "off")
		command.Env = append(os.Environ(), "BATCH="+t.batch, "BATCH_WINDOW="+t.window)
		out, err := command.Output()
		work.Check(err)
		work.Check(os.WriteFile(filepath.Join(work.Dir, t.name+".yaml"), out, 0o644))
	}
	fmt.Printf("# %s  N=%d  max=%d  window=%s  delay=%dms  coalescing off  %d cores\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"),
		o.n, o.max, o.window, o.delay.Milliseconds(), runtime.NumCPU())
	plain, err := work.StartStaticUpstream("nginx", fx, harness.StaticOptions{})
	work.Check(err)
	fmt.Printf("\n=== throughput: N=%d, no upstream delay, wrk -c64 ===\n", o.n)
	phase(o, fx, targets, "throughput", plain.Port)
	delayed, err := work.StartStaticUpstream("nginx-delayed", fx, harness.StaticOptions{Delay: o.delay})
	work.Check(err)
	fmt.Printf("\n=== latency: N=%d, upstream delay %dms, wrk -c8 (goal for batched: p50 ≤ 2 × delay + 5 ms = %d ms) ===\n",
		o.n, o.delay.Milliseconds(), 2*o.delay.Milliseconds()+5)
	phase(o, fx, targets, "latency", delayed.Port, "--delay-ms", fmt.Sprint(o.delay.Milliseconds()))
	work.Close()
}

// buildGoPeer builds ../shared/bench's Go peer at -go-peer unless it is there: from a copy of
// its source beside the binary (the shared harness is read-only), as Benchmarks/groups.sh does.
func buildGoPeer(o options) error {
	if info, err := os.Stat(o.goPeer); err == nil && info.Mode()&0o111 != 0 {
		return nil
	}
	dir := filepath.Dir(o.goPeer)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-rT", filepath.Join(o.bench, "peers", "go"), dir).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the Go peer: %v: %s", err, out)
	}
	exec.Command("chmod", "-R", "u+w", dir).Run()
	build := exec.Command("go", "build", "-o", o.goPeer, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the Go peer: %v: %s", err, out)
	}
	return nil
}

// counters are a Tributary's answers to /groups, upstream calls and detail batches so far.
type counters struct{ answers, calls, batches float64 }

func read(s *harness.Service) counters {
	return counters{
		answers: s.MetricSum("tributary_http_requests_total", `route="/groups"`, `status="200"`),
		calls:   s.MetricSum("tributary_upstream_request_duration_seconds_count", `upstream="tasks"`),
		batches: s.MetricSum("tributary_detail_batches_total", `resource="groups"`),
	}
}

// phase starts every target against the upstream on upstreamPort, waits for a quiet machine,
// runs run.sh MODE over them, prints each Tributary's calls per answer and stops them.
func phase(o options, fx *harness.StaticFixture, targets []*target, mode string, upstreamPort int, extra ...string) {
	upstream := fmt.Sprintf("http://127.0.0.1:%d", upstreamPort)
	for _, t := range targets {
		var err error
		if t.name == "go" {
			port, err := harness.FreePort()
			work.Check(err)
			t.service, err = work.StartProcess("go.log", port, o.goPeer, "--port", fmt.Sprint(port), "--upstream", upstream, "--pool", "128")
			work.Check(err)
		} else {
			t.service, err = work.StartServiceWith(harness.ServiceOptions{Bin: o.bin, ConfigPath: filepath.Join(work.Dir, t.name+".yaml"),
				Args: []string{"--upstream", "tasks=" + upstream}}, t.name+".log")
			work.Check(err)
		}
		work.Check(fx.CheckAnswer(t.service.Addr, 10*time.Second))
	}
	harness.WaitQuiet(o.quietMax, o.quietWait)
	before := map[string]counters{}
	for _, t := range targets[:3] {
		before[t.name] = read(t.service)
	}
	args := append([]string{mode, "--upstream", upstream, "-d", fmt.Sprintf("%ds", int(o.duration.Seconds())), "--rounds", fmt.Sprint(o.rounds),
		"--expected", filepath.Join(fx.Dir, "expected.json")}, extra...)
	for _, t := range targets {
		args = append(args, fmt.Sprintf("%s=http://%s", t.name, t.service.Addr))
	}
	run := exec.Command(filepath.Join(o.bench, "run.sh"), args...)
	run.Stdout, run.Stderr = os.Stdout, os.Stderr
	work.Check(run.Run())
	fmt.Printf("# upstream calls per answer over this phase (go: N+1 = %d by construction, it does not batch)\n", o.n+1)
	fmt.Printf("%-10s %9s %10s %16s %18s\n", "name", "answers", "calls", "calls/answer", "detail calls/ans")
	for _, t := range targets[:3] {
		after := read(t.service)
		a, c, b := after.answers-before[t.name].answers, after.calls-before[t.name].calls, after.batches-before[t.name].batches
		details := b
		if t.batch == "" {
			details = c - a
		}
		perAnswer := func(x float64) float64 {
			if a == 0 {
				return 0
			}
			return x / a
		}
		fmt.Printf("%-10s %9.0f %10.0f %16.3f %18.3f\n", t.name, a, c, perAnswer(c), perAnswer(details))
	}
	for _, t := range targets {
		t.service.Stop()
	}
}
