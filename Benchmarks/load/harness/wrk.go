package harness

// Debian's wrk, run by the tools that measure throughput and latency with it.

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Wrk is how RunWrk runs wrk.
type Wrk struct {
	URL         string
	Threads     int           // -t
	Connections int           // -c
	Duration    time.Duration // -d, in whole seconds
	Timeout     time.Duration // --timeout; 0: wrk's own (2 s)
	Header      string        // -H, e.g. "Authorization: Bearer …"; "": none
	Script      string        // -s, a Lua script's path; "": none
}

// WrkResult is what one wrk run reported.
type WrkResult struct {
	RPS          float64
	P50, P99     float64 // ms
	Requests     int
	Non2xx       int
	SocketErrors string        // connect/read/write/timeout, as wrk counts them
	CPU          time.Duration // wrk's own CPU time
	Elapsed      time.Duration
	Err          error
}

var (
	rpsLine     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	requestLine = regexp.MustCompile(`(\d+) requests in`)
	non2xxLine  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	socketLine  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	percentLine = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s|m)\s*$`)
)

// RunWrk runs `wrk … --latency` as w says, and kills it if it runs 30 s past its duration.
func RunWrk(w Wrk) WrkResult {
	ctx, cancel := context.WithTimeout(context.Background(), w.Duration+30*time.Second)
	defer cancel()
	seconds := strconv.Itoa(int(w.Duration.Round(time.Second) / time.Second))
	args := []string{"-t" + strconv.Itoa(w.Threads), "-c" + strconv.Itoa(w.Connections), "-d" + seconds + "s", "--latency"}
	if w.Timeout > 0 {
		args = append(args, "--timeout", strconv.Itoa(int(w.Timeout.Round(time.Second)/time.Second))+"s")
	}
	if w.Header != "" {
		args = append(args, "-H", w.Header)
	}
	if w.Script != "" {
		args = append(args, "-s", w.Script)
	}
	cmd := exec.CommandContext(ctx, "wrk", append(args, w.URL)...)
	started := time.Now()
	out, err := cmd.CombinedOutput()
	r := WrkResult{Elapsed: time.Since(started)}
	if cmd.ProcessState != nil {
		if usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.CPU = time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
		}
	}
	text := string(out)
	if err != nil {
		r.Err = fmt.Errorf("wrk: %v: %s", err, strings.TrimSpace(text))
	}
	if m := rpsLine.FindStringSubmatch(text); m != nil {
		r.RPS, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := requestLine.FindStringSubmatch(text); m != nil {
		r.Requests, _ = strconv.Atoi(m[1])
	}
	if m := non2xxLine.FindStringSubmatch(text); m != nil {
		r.Non2xx, _ = strconv.Atoi(m[1])
	}
	r.SocketErrors = "0/0/0/0"
	if m := socketLine.FindStringSubmatch(text); m != nil {
		r.SocketErrors = strings.Join(m[1:], "/")
	}
	for _, m := range percentLine.FindAllStringSubmatch(text, -1) {
		value, _ := strconv.ParseFloat(m[2], 64)
		switch m[3] {
		case "us":
			value /= 1000
		case "s":
			value *= 1000
		case "m":
			value *= 60000
		}
		if m[1] == "50" {
			r.P50 = value
		} else {
			r.P99 = value
		}
	}
	return r
}

// RunWrk runs wrk as w says (its URL at the service) and returns its result and the
// service's CPU time per request over the run, in ms (user + system, 10 ms ticks).
func (s *Service) RunWrk(w Wrk) (WrkResult, float64) {
	before := s.CPUTicks()
	r := RunWrk(w)
	perRequest := 0.0
	if r.Requests > 0 {
		perRequest = float64(s.CPUTicks()-before) * 10 / float64(r.Requests)
	}
	return r, perRequest
}

// Measure runs wrk -t2 on each of urls in turn, f.Rounds times: 2 s unreported, then
// f.Duration measured. It returns the req/s of the measured runs of each url (in the order
// of urls, a value a round), or the first error wrk reported.
func (f *RoundFlags) Measure(urls []string) ([][]float64, error) {
	results := make([][]float64, len(urls))
	for round := 1; round <= f.Rounds; round++ {
		for i, url := range urls {
			RunWrk(Wrk{URL: url, Threads: 2, Connections: f.Connections, Duration: 2 * time.Second})
			r := RunWrk(Wrk{URL: url, Threads: 2, Connections: f.Connections, Duration: f.Duration})
			if r.Err != nil {
				return nil, r.Err
			}
			results[i] = append(results[i], r.RPS)
		}
	}
	return results, nil
}

// Method is how Measure ran wrk, for the line under a report: "wrk -t2 -c64 -d10s, 5
// interleaved rounds, medians".
func (f *RoundFlags) Method() string {
	return fmt.Sprintf("wrk -t2 -c%d -d%s, %d interleaved rounds, medians", f.Connections, f.Duration, f.Rounds)
}

// EachRPS is the req/s of every round, as wrk wrote them (two decimals), space-separated.
func EachRPS(values []float64) string {
	var each []string
	for _, rps := range values {
		each = append(each, fmt.Sprintf("%.2f", rps))
	}
	return strings.Join(each, " ")
}
