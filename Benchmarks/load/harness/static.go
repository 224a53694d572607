package harness

// The static `tasks` upstream of ../shared/bench (its upstream/gen.py and nginx.conf), written
// and served here: the tree byte for byte as gen.py writes it, nginx configured as
// run-upstream.sh renders the template (one worker, keep-alive, no access log), started and
// stopped by PID through RunNginx.

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"
)

// staticNamespace is gen.py's uuid5 namespace: the same N gives the same ids there and here.
var staticNamespace = [16]byte{0x6f, 0x1c, 0x2f, 0x4e, 0x2b, 0x1a, 0x4c, 0x1e, 0x9a, 0x57, 0x3d, 0x0f, 0x3b, 0x2b, 0x7e, 0x11}

// staticBatchSizes are gen.py's BATCH_SIZES: the batch files written for every chunk of the
// list at each size.
var staticBatchSizes = []int{1, 5, 10, 20, 25, 50, 100, 200}

// StaticGroupID is the id of the i-th group (from 1) of the static fixture: uuid5 of
// "group-i" in gen.py's namespace.
func StaticGroupID(i int) string {
	hash := sha1.New()
	hash.Write(staticNamespace[:])
	hash.Write([]byte(fmt.Sprintf("group-%d", i)))
	u := hash.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// StaticMetadata is the body of GET /groups/{id}/metadata in the fixture: the result object
// with its taskCount and lastUpdated, as gen.py writes them.
func StaticMetadata(taskCount int, lastUpdated string) string {
	return fmt.Sprintf(`{"result":{"taskCount":%d,"lastUpdated":"%s"}}`, taskCount, lastUpdated)
}

// StaticFixture is a static tree of the tasks upstream for N groups:
//
//	Dir/groups.json                  GET /groups
//	Dir/groups/<id>/metadata.json    GET /groups/<id>/metadata
//	Dir/expected.json                what a correct GET /groups of the service answers
//	Dir/ids.txt                      one id a line, in list order
//	Dir/batch/<first>-<last>.json    GET /groups/metadata?ids=<first>,…,<last> for every
//	                                 chunk of the list at batch sizes 1, 5, 10, 20, 25, 50, 100, 200
type StaticFixture struct {
	Dir string
	IDs []string
}

// WriteStaticFixture writes the tree of n groups into dir (made first), every directory
// 0755 and file 0644: nginx's workers run as nobody.
func WriteStaticFixture(dir string, n int) (*StaticFixture, error) {
	f := &StaticFixture{Dir: dir}
	if err := os.RemoveAll(filepath.Join(dir, "groups")); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(dir, "batch")); err != nil {
		return nil, err
	}
	var groups, expected, details []string
	for i := 1; i <= n; i++ {
		id := StaticGroupID(i)
		taskCount := i*7%50 + 1
		lastUpdated := fmt.Sprintf("2026-11-%02dT%02d:%02d:00Z", 1+i%28, i%24, i%60)
		f.IDs = append(f.IDs, id)
		groups = append(groups, fmt.Sprintf(`{"id":"%s","name":"Group %d"}`, id, i))
		expected = append(expected, fmt.Sprintf(`{"id":"%s","name":"Group %d","taskCount":%d,"lastUpdated":"%s"}`, id, i, taskCount, lastUpdated))
		details = append(details, fmt.Sprintf(`{"id":"%s","taskCount":%d,"lastUpdated":"%s"}`, id, taskCount, lastUpdated))
		if err := writeStatic(filepath.Join(dir, "groups", id, "metadata.json"), StaticMetadata(taskCount, lastUpdated)); err != nil {
			return nil, err
		}
	}
	for _, sub := range []string{"groups", "batch"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	for _, size := range staticBatchSizes {
		for start := 0; start < n; start += size {
			end := start + size
			if end > n {
				end = n
			}
			name := fmt.Sprintf("%s-%s.json", f.IDs[start], f.IDs[end-1])
			if err := writeStatic(filepath.Join(dir, "batch", name), `{"result":[`+strings.Join(details[start:end], ",")+`]}`); err != nil {
				return nil, err
			}
		}
	}
	ids := ""
	for _, id := range f.IDs {
		ids += id + "\n"
	}
	for name, body := range map[string]string{
		"groups.json":   `{"result":[` + strings.Join(groups, ",") + `]}`,
		"expected.json": "[" + strings.Join(expected, ",") + "]",
		"ids.txt":       ids,
	} {
		if err := writeStatic(filepath.Join(dir, name), body); err != nil {
			return nil, err
		}
	}
	return f, os.Chmod(dir, 0o755)
}

// CheckAnswer checks that GET /groups of the service at addr answers 200 with what the
// fixture expects (expected.json, compared as JSON: order included), trying for up to
// `within` until the first 200.
func (f *StaticFixture) CheckAnswer(addr string, within time.Duration) error {
	expected, err := os.ReadFile(filepath.Join(f.Dir, "expected.json"))
	if err != nil {
		return err
	}
	var body []byte
	deadline := time.Now().Add(within)
	for {
		response, err := http.Get("http://" + addr + "/groups")
		if err == nil {
			body, _ = io.ReadAll(response.Body)
			response.Body.Close()
			if response.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET /groups of %s did not answer 200 within %s", addr, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var got, want any
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("GET /groups of %s: %v: %.200s", addr, err, body)
	}
	if err := json.Unmarshal(bytes.TrimSpace(expected), &want); err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("GET /groups of %s differs from %s/expected.json", addr, f.Dir)
	}
	return nil
}

// writeStatic writes body to path (0644), its directories made (0755) first.
func writeStatic(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// StaticOptions is how StartStaticUpstream serves a fixture.
type StaticOptions struct {
	// Delay, when set, is added to every answer by echo_sleep of Debian's
	// libnginx-mod-http-echo (timer-based: it does not block the worker).
	Delay time.Duration
	// NoOpenFileCache turns nginx's open_file_cache off: the shared template caches each
	// file's descriptor, size and mtime for 600 s, and would go on answering a replaced
	// file's old ETag, length and body.
	NoOpenFileCache bool
	// HeaderBuffers, when set, is nginx's large_client_header_buffers (e.g. "4 64k": its
	// default refuses a header line over 8 KiB with 400).
	HeaderBuffers string
}

const echoModule = "/usr/lib/nginx/modules/ngx_http_echo_module.so"

// StartStaticUpstream serves the fixture f with Debian's nginx on a free loopback port, its
// files in dir (made), as ../shared/bench's run-upstream.sh does with its template, and waits
// until GET /groups answers:
//
//	GET /groups, /groups/<id>/metadata   the files URI.json
//	GET /groups/metadata?ids=a,…,z       batch/a-z.json (the ids comma-separated, or by %2C)
func StartStaticUpstream(dir string, f *StaticFixture, o StaticOptions) (*Nginx, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var limit syscall.Rlimit
	nofile := uint64(65536)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit) == nil && limit.Max < 1<<20 {
		nofile = limit.Max
	}
	loadEcho, static, batch := "", "try_files $uri.json =404;", "try_files /batch/$batch_file.json =404;"
	if o.Delay > 0 {
		if _, err := os.Stat(echoModule); err != nil {
			return nil, fmt.Errorf("a delayed upstream needs %s (apt-get install libnginx-mod-http-echo)", echoModule)
		}
		loadEcho = "load_module " + echoModule + ";"
		sleep := fmt.Sprintf("echo_sleep %.3f;", o.Delay.Seconds())
		static, batch = sleep+" echo_exec @static;", sleep+" echo_exec @batch;"
	}
	cache := "open_file_cache max=100000 inactive=60s;\n    open_file_cache_valid 600s;"
	if o.NoOpenFileCache {
		cache = "open_file_cache off;"
	}
	if o.HeaderBuffers != "" {
		cache += "\n    large_client_header_buffers " + o.HeaderBuffers + ";"
	}
	config := fmt.Sprintf(`# generated by Benchmarks/load/harness (../shared/bench/upstream/nginx.conf)
%[1]s
daemon off;
worker_processes 1;
worker_rlimit_nofile %[2]d;
pid "%[3]s/nginx.pid";
error_log "%[3]s/error.log" warn;
events {
    worker_connections 16384;
    multi_accept on;
}
http {
    access_log off;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    %[4]s
    keepalive_timeout 300s;
    keepalive_requests 10000000;
    types { application/json json; }
    map $arg_ids $batch_file {
        "~^(?<only>[0-9a-f-]{36})$"                                     $only-$only;
        "~^(?<first>[0-9a-f-]{36})(,|%%2C|%%2c).*(?<last>[0-9a-f-]{36})$" $first-$last;
        default                                                 none;
    }
    default_type application/json;
    charset off;
    client_body_temp_path "%[3]s/client_body";
    proxy_temp_path "%[3]s/proxy";
    fastcgi_temp_path "%[3]s/fastcgi";
    uwsgi_temp_path "%[3]s/uwsgi";
    scgi_temp_path "%[3]s/scgi";
    server {
        listen 127.0.0.1:%[5]d reuseport backlog=4096;
        root "%[6]s";
        location / {
            limit_except GET { deny all; }
            %[7]s
        }
        location @static { try_files $uri.json =404; }
        location = /groups/metadata {
            limit_except GET { deny all; }
            %[8]s
        }
        location @batch { try_files /batch/$batch_file.json =404; }
    }
}
`, loadEcho, nofile, dir, cache, port, f.Dir, static, batch)
	return RunNginx(dir, port, config, "/groups")
}

// StartStaticUpstream starts it as StartStaticUpstream does, its files in the directory
// `name` of the work directory, and adds it to what an interrupt or Close stops.
func (w *Workspace) StartStaticUpstream(name string, f *StaticFixture, o StaticOptions) (*Nginx, error) {
	os.Chmod(w.Dir, 0o755) // nginx's worker (nobody) reads the fixture in it
	n, err := StartStaticUpstream(filepath.Join(w.Dir, name), f, o)
	if err == nil {
		w.OnClose(n.Stop)
	}
	return n, err
}
