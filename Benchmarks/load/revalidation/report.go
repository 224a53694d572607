package main

// The tables and verdicts, and the few readings they need of nginx and of an event.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

// headerSizes is the bytes of nginx's headers (status line included) in a 200 and a 304 to
// GET path, and the ETag: nginx revalidates static files by itself.
func headerSizes(port int, path string) (h200, h304 int, etag string, err error) {
	ask := func(header string) (status string, size int, etag string, err error) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		if err != nil {
			return "", 0, "", err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: */*\r\n%s\r\n", path, port, header)
		reader := bufio.NewReader(conn)
		for {
			line, err := reader.ReadString('\n')
			if err != nil {
				return "", 0, "", err
			}
			size += len(line)
			trimmed := strings.TrimRight(line, "\r\n")
			if status == "" {
				status = strings.Fields(trimmed)[1]
			} else if name, value, ok := strings.Cut(trimmed, ":"); ok && strings.EqualFold(name, "etag") {
				etag = strings.TrimSpace(value)
			}
			if trimmed == "" {
				return status, size, etag, nil
			}
		}
	}
	_, h200, etag, err = ask("")
	if err != nil {
		return
	}
	status, h304, _, err := ask("If-None-Match: " + etag + "\r\n")
	if err == nil && status != "304" {
		err = fmt.Errorf("nginx answered %s, not 304, to If-None-Match: %s", status, etag)
	}
	return
}

type op struct {
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

func parseOps(data string) ([]op, error) {
	var ops []op
	err := json.Unmarshal([]byte(data), &ops)
	return ops, err
}

// summary is one line of a measured run's figures per refresh.
func summary(r run) string {
	n := float64(r.count)
	return fmt.Sprintf("%.1f calls, %.1f 304s, %s B, %.2f ms CPU (stat), %.2f ms (schedstat), %.1f polls, %.1f ms, %d events in %d refreshes",
		r.calls/n, r.notModified/n, thousands(float64(r.tcp)/n, 0), r.cpuMs/n, r.schedMs/n, float64(r.polls)/n, r.durationMs, r.events, r.count)
}

// thousands formats v with `decimals` decimals and commas between thousands, as Python's
// f"{v:,.Nf}".
func thousands(v float64, decimals int) string {
	text := fmt.Sprintf("%.*f", decimals, math.Abs(v))
	whole, fraction, _ := strings.Cut(text, ".")
	var b strings.Builder
	for i, digit := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(digit)
	}
	out := b.String()
	if fraction != "" {
		out += "." + fraction
	}
	if v < 0 && strings.Trim(text, "0.") != "" {
		out = "-" + out
	}
	return out
}

type report struct {
	o       options
	fixture *fixtureFacts
	polls   map[string]pollCost
	nothing map[string][]run
	one     map[string]run
	quota   map[string]run
}

func table(title string, header []string, lines [][]string) {
	fmt.Printf("\n%s\n\n", title)
	fmt.Println("| " + strings.Join(header, " | ") + " |")
	fmt.Println("|" + strings.Join(append([]string{"---"}, repeat("---:", len(header)-1)...), "|") + "|")
	for _, line := range lines {
		fmt.Println("| " + strings.Join(line, " | ") + " |")
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func ratio(off, on float64) float64 {
	if on > 0 {
		return off / on
	}
	return math.Inf(1)
}

// less says a ratio off ÷ on as what revalidation saves.
func less(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("×%.2f less", r)
	}
	return fmt.Sprintf("×%.2f MORE", 1/r)
}

// perMode are scenario 1's figures of one mode: medians over the rounds, per refresh.
type perMode struct {
	calls, notModified, tcp, tcpSent, headers, user, kernel, bodies float64
	cpu, sched, schedRaw, polls, duration                           float64
	events                                                          int
	errors                                                          float64
	closed                                                          int
	roundsTCP, roundsCPU, roundsSched                               []float64
}

// print prints the tables and the verdicts, and says whether the run failed.
func (r *report) print() (failed bool) {
	var verdicts []string
	o := r.o
	if r.nothing != nil {
		per := map[string]perMode{}
		for _, mode := range []string{"on", "off"} {
			runs, p := r.nothing[mode], r.polls[mode]
			figure := func(f func(run) float64) float64 {
				var values []float64
				for _, x := range runs {
					values = append(values, f(x)/float64(x.count))
				}
				return harness.Median(values)
			}
			headers := func(x run) float64 {
				return (x.calls-x.notModified)*float64(r.fixture.h200) + x.notModified*float64(r.fixture.h304)
			}
			cpu := func(x run) float64 { return x.cpuMs - float64(x.polls)*p.cpuMs }
			sched := func(x run) float64 { return x.schedMs - float64(x.polls)*p.schedMs }
			m := perMode{
				calls: figure(func(x run) float64 { return x.calls }), notModified: figure(func(x run) float64 { return x.notModified }),
				tcp: figure(func(x run) float64 { return float64(x.tcp) }), tcpSent: figure(func(x run) float64 { return float64(x.tcpSent) }),
				headers: figure(headers), user: figure(func(x run) float64 { return x.userMs }), kernel: figure(func(x run) float64 { return x.kernelMs }),
				bodies: figure(func(x run) float64 { return float64(x.tcp) - headers(x) }),
				cpu:    figure(cpu), sched: figure(sched), schedRaw: figure(func(x run) float64 { return x.schedMs }),
				polls: figure(func(x run) float64 { return float64(x.polls) }),
			}
			var durations []float64
			for _, x := range runs {
				durations = append(durations, x.durationMs)
				m.events += x.events
				m.errors += x.errors
				m.closed += x.closed
				m.roundsTCP = append(m.roundsTCP, float64(x.tcp)/float64(x.count))
				m.roundsCPU = append(m.roundsCPU, cpu(x)/float64(x.count))
				m.roundsSched = append(m.roundsSched, sched(x)/float64(x.count))
			}
			m.duration = harness.Median(durations)
			per[mode] = m
		}
		on, off := per["on"], per["off"]
		f := func(v float64, d int) string { return thousands(v, d) }
		x := func(a, b float64) string { return fmt.Sprintf("×%.2f", ratio(a, b)) }
		padded := ""
		if o.pad > 0 {
			padded = fmt.Sprintf(" (each padded by %s B)", thousands(float64(o.pad), 0))
		}
		bodies := "(on: none)"
		if on.bodies > 0.5 {
			bodies = fmt.Sprintf("×%.0f", ratio(off.bodies, on.bodies))
		}
		table(fmt.Sprintf("1. Nothing changes: %d items + details%s, %d refreshes × %d rounds per mode, medians of the rounds, per refresh",
			o.items, padded, o.refreshes, o.rounds), []string{"per refresh", "revalidate: true", "revalidate: false", "off ÷ on"}, [][]string{
			{"upstream calls (attempts)", f(on.calls, 1), f(off.calls, 1), ""},
			{"of them 304 (not_modified)", f(on.notModified, 1), f(off.notModified, 1), ""},
			{"upstream bytes received (TCP payload)", f(on.tcp, 0), f(off.tcp, 0), x(off.tcp, on.tcp)},
			{"… of which headers (nginx's 200/304 header sizes × calls)", f(on.headers, 0), f(off.headers, 0), x(off.headers, on.headers)},
			{"… of which bodies (the rest)", f(on.bodies, 0), f(off.bodies, 0), bodies},
			{"service CPU, ms (utime+stime, polls subtracted)", f(on.cpu, 2), f(off.cpu, 2), x(off.cpu, on.cpu)},
			{"… user / kernel, ms (utime / stime, polls included)", fmt.Sprintf("%.2f / %.2f", on.user, on.kernel), fmt.Sprintf("%.2f / %.2f", off.user, off.kernel), ""},
			{"service CPU, ms (schedstat, polls subtracted)", f(on.sched, 2), f(off.sched, 2), x(off.sched, on.sched)},
			{"service CPU, ms (schedstat, as measured)", f(on.schedRaw, 2), f(off.schedRaw, 2), x(off.schedRaw, on.schedRaw)},
			{"upstream request bytes sent (TCP payload)", f(on.tcpSent, 0), f(off.tcpSent, 0), x(off.tcpSent, on.tcpSent)},
			{"/metrics polls to see it end", f(on.polls, 1), f(off.polls, 1), ""},
			{"refresh time, ms (reload to the last call counted)", f(on.duration, 1), f(off.duration, 1), x(off.duration, on.duration)},
			{"events to the subscriber (all rounds)", fmt.Sprint(on.events), fmt.Sprint(off.events), ""},
		})
		rounds := func(values []float64, d int) string {
			var out []string
			for _, v := range values {
				out = append(out, thousands(v, d))
			}
			return strings.Join(out, ", ")
		}
		fmt.Printf("\nRounds (per refresh): bytes on %s, off %s; CPU (schedstat) on %s, off %s ms; CPU (stat) on %s, off %s ms.\n",
			rounds(on.roundsTCP, 0), rounds(off.roundsTCP, 0), rounds(on.roundsSched, 2), rounds(off.roundsSched, 2), rounds(on.roundsCPU, 2), rounds(off.roundsCPU, 2))
		pOn, pOff := r.polls["on"], r.polls["off"]
		fmt.Printf("A /metrics poll at idle cost %.3f / %.3f ms (schedstat, on / off), %.3f / %.3f ms (stat); rchar counts only what the service read with read(): %.0f B per poll against the %.0f B request, not the upstream's answers.\n",
			pOn.schedMs, pOff.schedMs, pOn.cpuMs, pOff.cpuMs, pOn.rchar, pOn.sent)
		fx := r.fixture
		fmt.Printf("nginx's headers: %d B in a 200, %d B in a 304; the bodies of one refresh: %s B (list %s B, %d details %s B): a 304 saves a metadata call only its %.0f-byte body.\n",
			fx.h200, fx.h304, thousands(float64(fx.listBytes+fx.detailBytes), 0), thousands(float64(fx.listBytes), 0), o.items,
			thousands(float64(fx.detailBytes), 0), float64(fx.detailBytes)/float64(o.items))
		if on.errors != 0 || off.errors != 0 || on.closed != 0 || off.closed != 0 {
			fmt.Printf("NOTE: upstream errors on/off %.0f/%.0f, connections closed while measured %d/%d (their bytes are missing)\n", on.errors, off.errors, on.closed, off.closed)
		}
		if on.notModified == 0 {
			failed = true
			runs := r.nothing["on"]
			fmt.Println("NO 304s COUNTED with revalidate: true; the on service's last upstream metrics:", runs[len(runs)-1].lastMetrics)
		}
		b, c := ratio(off.tcp, on.tcp), ratio(off.sched, on.sched)
		verdicts = append(verdicts,
			fmt.Sprintf("1. upstream bytes: off ÷ on = ×%.2f, i.e. %s with revalidation (goal ≥ ×20 less): %s", b, less(b), metOr(b >= 20, "MET", "MISSED")),
			fmt.Sprintf("1. service CPU per refresh: off ÷ on = ×%.2f (schedstat; utime+stime ×%.2f), i.e. %s with revalidation (goal ≥ ×5 less): %s",
				c, ratio(off.cpu, on.cpu), less(c), metOr(c >= 5, "MET", "MISSED")),
			fmt.Sprintf("1. no event when nothing changes: on %d, off %d events: %s", on.events, off.events, metOr(on.events == 0 && off.events == 0, "OK", "WRONG")))
	}
	if r.one != nil {
		rows := []struct {
			label string
			f     func(run) string
		}{
			{"upstream calls per refresh", func(x run) string { return fmt.Sprintf("%.1f", x.calls/float64(x.count)) }},
			{"of them 304", func(x run) string { return fmt.Sprintf("%.1f", x.notModified/float64(x.count)) }},
			{"upstream bytes per refresh", func(x run) string { return thousands(float64(x.tcp)/float64(x.count), 0) }},
			{"service CPU per refresh, ms (schedstat, as measured)", func(x run) string { return fmt.Sprintf("%.2f", x.schedMs/float64(x.count)) }},
			{"events per refresh (each refresh)", func(x run) string {
				var out []string
				for _, n := range x.perRefreshEvents {
					out = append(out, fmt.Sprint(n))
				}
				return strings.Join(out, ",")
			}},
			{"events / refreshes", func(x run) string { return fmt.Sprintf("%d / %d", x.events, x.count) }},
			{"one patch per refresh, of the changed item only", func(x run) string { return metOr(len(x.problems) == 0, "pass", "FAIL") }},
		}
		var lines [][]string
		for _, row := range rows {
			lines = append(lines, []string{row.label, row.f(r.one["on"]), row.f(r.one["off"])})
		}
		table(fmt.Sprintf("2. One detail changes per refresh: %d items, %d refreshes per mode, ?updates=patch", o.items, o.changes),
			[]string{"", "revalidate: true", "revalidate: false"}, lines)
		var passes []string
		for _, mode := range []string{"on", "off"} {
			problems := r.one[mode].problems
			for i, problem := range problems {
				if i < 10 {
					fmt.Printf("%s: %s\n", mode, problem)
				}
			}
			if len(problems) > 0 {
				failed = true
			}
			passes = append(passes, mode+" "+metOr(len(problems) == 0, "pass", "FAIL"))
		}
		verdicts = append(verdicts, "2. exactly one event per refresh, a patch of the changed item only: "+strings.Join(passes, ", "))
	}
	if r.quota != nil {
		type figures struct{ calls, free, counted float64 }
		fig := map[string]figures{}
		for mode, x := range r.quota {
			calls, free := x.calls/float64(x.count), x.notModified/float64(x.count)
			fig[mode] = figures{calls, free, calls - free}
		}
		n := float64(o.identities)
		col := func(label string, f func(figures) string) []string {
			return []string{label, f(fig["on"]), f(fig["off"])}
		}
		lines := [][]string{
			{"live identities (pipelines)", fmt.Sprintf("%.0f", r.quota["on"].pipelines), fmt.Sprintf("%.0f", r.quota["off"].pipelines)},
			col("upstream calls per refresh round", func(g figures) string { return thousands(g.calls, 0) }),
			col("of them 304 (free)", func(g figures) string { return thousands(g.free, 0) }),
			col("counted calls per round", func(g figures) string { return thousands(g.counted, 0) }),
			col("counted per hour at 30 s, all identities (× 120)", func(g figures) string { return thousands(g.counted*120, 0) }),
			col("counted per hour at 30 s, per identity", func(g figures) string { return thousands(g.counted*120/n, 0) }),
			col("calls per hour at 30 s, per identity, 304s counted too", func(g figures) string { return thousands(g.calls*120/n, 0) }),
			col("a 5,000/h quota per identity", func(g figures) string { return metOr(g.counted*120/n <= 5000, "fits", "EXCEEDED") }),
		}
		table(fmt.Sprintf("3. Quota: %d identities × %d-item list (%d calls each per refresh), %d rounds per mode after one warm-up",
			o.identities, o.quotaItems, o.quotaItems+1, o.quotaRounds), []string{"", "revalidate: true", "revalidate: false"}, lines)
		fmt.Println("\nThe per-hour figures are an extrapolation: counted calls of one measured refresh round × 120 " +
			"(a 30 s refreshInterval), 304s free as GitHub counts them; the rounds ran on reloads, not for an hour.")
		verdicts = append(verdicts, fmt.Sprintf("3. counted calls per hour at 30 s: %s with revalidation against %s without (%s against %s per identity, against a 5,000/h quota)",
			thousands(fig["on"].counted*120, 0), thousands(fig["off"].counted*120, 0), thousands(fig["on"].counted*120/n, 0), thousands(fig["off"].counted*120/n, 0)))
		for _, mode := range []string{"on", "off"} {
			if e := r.quota[mode].errors; e != 0 {
				fmt.Printf("NOTE: %s: %.0f upstream errors\n", mode, e)
			}
		}
	}
	fmt.Println("\nVerdicts:")
	for _, v := range verdicts {
		fmt.Println("- " + v)
	}
	return failed
}

func metOr(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
