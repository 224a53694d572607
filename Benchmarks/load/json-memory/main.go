// json-memory: peak memory of the service parsing hostile upstream bodies. Each shape below,
// just under the default maxResponseBytes (8 MiB), is served by the tool's upstream and asked
// for once through a `kind: search` resource that passes the whole body on (coalescing off,
// upstream timeout 30 s, no retry), by a fresh service of its own for each shape (one
// worker). Prints each answer's status and error code, and the service's peak RSS (VmHWM)
// before and after: what one parse of a body can make the process grow.
//
//	json-memory -bin PATH
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

// shape is one hostile body: unit repeated, separated and enclosed, up to the size limit.
type shape struct {
	name, unit, opening, closing, separator string
}

var shapes = []shape{
	{"empty-arrays", "[]", "[", "]", ","},               // [[],[],...]
	{"one-element-arrays", "[1]", "[", "]", ","},        // [[1],[1],...]
	{"tiny-numbers", "1", "[", "]", ","},                // [1,1,...]
	{"nested-arrays", "[[[[]]]]", "[", "]", ","},        // [[[[[]]]],...]
	{"empty-objects-spaced", `"a": {}`, "{", "}", ", "}, // {"a": {}, "a": {}, ...}
}

// body is the shape's text, as long as fits in 8 MiB - 16 bytes.
func (s shape) body() []byte {
	const limit = 8*1024*1024 - 16
	count := (limit - 2) / (len(s.unit) + len(s.separator))
	units := make([]string, count)
	for i := range units {
		units[i] = s.unit
	}
	return []byte(s.opening + strings.Join(units, s.separator) + s.closing)
}

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: json-memory -bin PATH")
		os.Exit(2)
	}

	work, err := harness.NewWorkspace("json-memory", *keep)
	harness.Check(err)
	bodies := map[string][]byte{}
	var names []string
	for _, s := range shapes {
		bodies[s.name] = s.body()
		names = append(names, s.name)
	}
	upstream, err := harness.StartUpstream(harness.UpstreamOptions{Bodies: bodies})
	work.Check(err)
	defer upstream.Close()
	config, err := harness.WriteConfig(work.Dir, harness.Config{Tool: "json-memory", UpstreamURL: upstream.URL,
		Timeout: "30s", Retries: "0", Searches: names, NoCoalescing: true})
	work.Check(err)

	client := &http.Client{Timeout: 60 * time.Second}
	peak := func(s *harness.Service) string { return fmt.Sprintf("%.1f MiB", float64(s.PeakRSSKiB())/1024) }
	// A service of its own for each shape: VmHWM is the process's peak so far.
	for _, shape := range shapes {
		s, err := work.StartService(*bin, config, shape.name+".log", 1)
		work.Check(err)
		before := peak(s)
		response, err := client.Get("http://" + s.Addr + "/" + shape.name + "?q=abcd")
		work.Check(err)
		answer, _ := io.ReadAll(response.Body)
		response.Body.Close()
		var document struct {
			Error struct{ Code string } `json:"error"`
		}
		code := "-"
		if json.Unmarshal(answer, &document) == nil && document.Error.Code != "" {
			code = document.Error.Code
		}
		fmt.Printf("%-22s body %d bytes: %d %-20s peak RSS %s before, %s after\n",
			shape.name, len(bodies[shape.name]), response.StatusCode, code, before, peak(s))
		s.Stop()
	}
	work.Close()
}
