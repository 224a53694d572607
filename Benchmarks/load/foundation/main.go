// Command foundation is the foundation benchmark (issue 2): evhttp through Tributary's
// HTTPServer module against nginx serving the same bytes, side by side in one run, with wrk;
// medians of -rounds interleaved rounds, reported as ratios to nginx. The rows:
//
//	nginx    a static file (/usr/sbin/nginx, one worker, the access log off)
//	evhttp   Benchmarks/evhttp-hello.c (-evhttp, compiled here with cc and libevent's
//	         pkg-config flags): libevent's evhttp in plain C answering the same bytes, the floor
//	         under the Swift layer
//	hello    `FoundationBench hello` (-bin): Tributary's HTTPServer answering the same bytes
//	         from memory
//	proxy    `FoundationBench proxy`: each request makes one pooled upstream call (a pool of
//	         128) to that nginx through UpstreamClient and answers its body
//
// Every process listens on a free loopback port and must answer GET /hello.json with the
// bytes of hello.json before the rounds; each measured wrk run follows 2 s unreported.
// Benchmarks/foundation.sh builds FoundationBench and runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

// hello is what every target answers (FoundationBench's and evhttp-hello.c's bytes).
const hello = `{"hello":"world","from":"tributary"}`

func main() {
	bin := flag.String("bin", "", "the FoundationBench binary (required)")
	evhttpSource := flag.String("evhttp", "", "Benchmarks/evhttp-hello.c, compiled here (required)")
	f := harness.DeclareRoundFlags(3)
	flag.Parse()
	if *bin == "" || *evhttpSource == "" || f.Rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: foundation -bin FoundationBench -evhttp Benchmarks/evhttp-hello.c [-rounds R] [-duration D] [-connections C]")
		os.Exit(2)
	}
	work, err := harness.NewWorkspace("foundation", false)
	harness.Check(err)
	evhttp := filepath.Join(work.Dir, "evhttp-hello")
	work.Check(compile(*evhttpSource, evhttp))

	nginx, err := startNginx(work)
	work.Check(err)
	urls := map[string]string{"nginx": fmt.Sprintf("http://127.0.0.1:%d/hello.json", nginx.Port)}
	upstream := fmt.Sprintf("http://127.0.0.1:%d", nginx.Port)
	for _, target := range []string{"hello", "proxy", "evhttp"} {
		port, err := harness.FreePort()
		work.Check(err)
		command := map[string][]string{
			"hello":  {*bin, "hello", strconv.Itoa(port)},
			"proxy":  {*bin, "proxy", strconv.Itoa(port), upstream, "128"},
			"evhttp": {evhttp, strconv.Itoa(port)},
		}[target]
		s, err := work.StartProcess(target+".log", port, command[0], command[1:]...)
		work.Check(err)
		urls[target] = "http://" + s.Addr + "/hello.json"
	}
	targets := []string{"nginx", "evhttp", "hello", "proxy"}
	var measured []string
	for _, target := range targets {
		work.Check(checkAnswer(target, urls[target]))
		measured = append(measured, urls[target])
	}
	results, err := f.Measure(measured)
	work.Check(err)
	work.Close()

	nginxMedian := harness.Median(results[0])
	fmt.Printf("%-8s %12s %10s   %s\n", "target", "req/s", "vs nginx", "rounds")
	for i, target := range targets {
		median := harness.Median(results[i])
		fmt.Printf("%-8s %12.0f %9.0f%%   %s\n", target, median, median/nginxMedian*100, harness.EachRPS(results[i]))
	}
	fmt.Printf("%s; nginx 1 worker; %d cores shared by all\n", f.Method(), runtime.NumCPU())
}

// compile builds the C evhttp server at source into out: cc -O2 with libevent's pkg-config
// flags.
func compile(source, out string) error {
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "libevent").Output()
	if err != nil {
		return fmt.Errorf("pkg-config libevent (apt-get install libevent-dev pkg-config): %v", err)
	}
	cc := exec.Command("cc", append([]string{"-O2", "-o", out, source}, strings.Fields(string(flags))...)...)
	if text, err := cc.CombinedOutput(); err != nil {
		return fmt.Errorf("cc %s: %v: %s", source, err, text)
	}
	return nil
}

// startNginx serves www/hello.json of the work directory, and it for every other path, with
// nginx on a free loopback port (one worker, the access log off, keep-alive without limit)
// and adds it to what an interrupt or Close stops.
func startNginx(work *harness.Workspace) (*harness.Nginx, error) {
	www := filepath.Join(work.Dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	// nginx's worker runs as nobody: let it through the work directory to www and its file.
	for _, dir := range []string{work.Dir, www} {
		os.Chmod(dir, 0o755)
	}
	if err := os.WriteFile(filepath.Join(www, "hello.json"), []byte(hello), 0o644); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work.Dir, "nginx")
	config := fmt.Sprintf(`daemon off;
worker_processes 1;
pid "%[1]s/nginx.pid";
error_log "%[1]s/error.log";
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path "%[1]s/client_body";
    proxy_temp_path "%[1]s/proxy";
    fastcgi_temp_path "%[1]s/fastcgi";
    uwsgi_temp_path "%[1]s/uwsgi";
    scgi_temp_path "%[1]s/scgi";
    server {
        listen 127.0.0.1:%[2]d;
        root "%[3]s";
        default_type application/json;
        location / { try_files $uri /hello.json; }
    }
}
`, dir, port, www)
	nginx, err := harness.RunNginx(dir, port, config, "/hello.json")
	if err == nil {
		work.OnClose(nginx.Stop)
	}
	return nginx, err
}

// checkAnswer checks that GET url answers 200 with the bytes of hello.json.
func checkAnswer(target, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	response, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("%s: %v", target, err)
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	if response.StatusCode != 200 || !bytes.Equal(body, []byte(hello)) {
		return fmt.Errorf("%s: GET %s answered %d %.200q, not 200 %s", target, url, response.StatusCode, body, hello)
	}
	return nil
}
