package main

// The peers one run of the tool measures with the same load client: Tributary (`tributary
// serve` refreshing /groups from this tool's upstream); with -peers …,nchan, Debian's
// nginx with the Nchan module (libnginx-mod-nchan), to which the tool publishes the same
// document (or patch) itself; with -peers …,floor, the floor (floor.go): this process's own
// threads writing the same events, one write(2) per subscriber. Each peer is started fresh
// for a run; the processes are stopped by their PIDs.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

// peer is a server under test, as measure sees it: where its subscribers connect, what its
// processes cost, and how an update is made.
type peer interface {
	port() int
	paths(shape layout) []string // what one subscriber asks for, one connection each
	rssKiB() int                 // VmRSS of the processes that hold the subscribers, summed
	cpuTicks() int               // their CPU time so far (1/100 s)
	preempted() int              // their involuntary context switches so far
	profilePID() int             // the process -profile attaches to
	// update returns the request that makes `version` (already the upstream's) reach the
	// subscribers; measure takes t0 just before calling it, so preparing it is not timed.
	update(version int64) func() error
	check() error // why it can no longer be measured (it or a worker exited), or nil
	logTail() string
	stop()
}

// peerNames are -peers' names, in the order they run within a run.
var peerNames = []string{"tributary", "nchan", "floor"}

func parsePeers(list string) ([]string, error) {
	var peers []string
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		known := name == "tributary" || name == "nchan" || name == "floor"
		if !known || seen[name] {
			return nil, fmt.Errorf("-peers: one or more of tributary, nchan and floor, each once, e.g. tributary,nchan,floor (found %q)", list)
		}
		seen[name] = true
	}
	// Tributary first whatever the order given: the comparison reads its event sizes.
	for _, name := range peerNames {
		if seen[name] {
			peers = append(peers, name)
		}
	}
	return peers, nil
}

// tributaryPeer is the service, refreshed by POST /groups/reload.
type tributaryPeer struct {
	service  *harness.Service
	reloader *http.Client
}

func newTributaryPeer(service *harness.Service) *tributaryPeer {
	return &tributaryPeer{service: service, reloader: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
}

func (t *tributaryPeer) port() int                   { return t.service.Port }
func (t *tributaryPeer) paths(shape layout) []string { return shape.paths() }
func (t *tributaryPeer) rssKiB() int                 { return t.service.RSSKiB() }
func (t *tributaryPeer) cpuTicks() int               { return t.service.CPUTicks() }
func (t *tributaryPeer) preempted() int              { return t.service.InvoluntarySwitches() }
func (t *tributaryPeer) profilePID() int             { return t.service.PID }
func (t *tributaryPeer) logTail() string             { return t.service.LogTail() }
func (t *tributaryPeer) stop()                       { t.service.Stop() }

func (t *tributaryPeer) check() error {
	if !t.service.Alive() {
		return fmt.Errorf("tributary exited during the run: %v", t.service.ExitErr())
	}
	return nil
}

// update: the upstream already answers `version`; the reload makes the service fetch it.
func (t *tributaryPeer) update(version int64) func() error {
	return func() error {
		response, err := t.reloader.Post("http://"+t.service.Addr+"/groups/reload", "application/json", nil)
		if err != nil {
			return fmt.Errorf("POST /groups/reload: %w", err)
		}
		body, _ := io.ReadAll(response.Body)
		response.Body.Close()
		if response.StatusCode != 202 {
			return fmt.Errorf("POST /groups/reload: %d %s", response.StatusCode, body)
		}
		return nil
	}
}

// Nchan's locations: one channel, published by POST /pub, followed by EventSource on /sub.
const (
	nchanPublishPath   = "/pub"
	nchanSubscribePath = "/sub"
)

// nchanPeer is nginx with the Nchan module; the tool publishes each update to it.
type nchanPeer struct {
	nginx     *harness.Nginx
	workers   []int
	up        *harness.Upstream
	patch     bool
	publisher *http.Client
}

// startNchan starts nginx with Nchan (config: nchanConfig) in dir with `workers` workers,
// waits (≤ 5 s) until they all run, and publishes the upstream's current document as a
// snapshot: with nchan_message_buffer_length 1 and nchan_subscriber_first_message oldest, it
// is the first event of every subscriber that connects before the first update, as a
// Tributary subscriber's first event is the current snapshot. Call it from the main
// goroutine (the master's parent-death signal is tied to the thread that starts it).
func startNchan(work *harness.Workspace, dir, module string, workers, subscribers int, up *harness.Upstream, patch bool) (*nchanPeer, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	config, err := nchanConfig(dir, module, port, workers, subscribers)
	if err != nil {
		return nil, err
	}
	// The worker runs as nobody: let it through the work directory to its own (mode 0755).
	os.Chmod(work.Dir, 0o711)
	nginx, err := harness.RunNginx(dir, port, config, "/healthz")
	if err != nil {
		return nil, err
	}
	work.OnClose(nginx.Stop)
	n := &nchanPeer{nginx: nginx, up: up, patch: patch,
		publisher: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	deadline := time.Now().Add(5 * time.Second)
	for n.workers = nginx.WorkerPIDs(); len(n.workers) < workers && time.Now().Before(deadline); n.workers = nginx.WorkerPIDs() {
		time.Sleep(20 * time.Millisecond)
	}
	if len(n.workers) != workers {
		nginx.Stop()
		return nil, fmt.Errorf("nginx runs %d workers after 5 s, not %d: %s", len(n.workers), workers, nginx.LogTail())
	}
	document, err := documentOf(up)
	if err == nil {
		err = n.publish("snapshot", document)
	}
	if err != nil {
		nginx.Stop()
		return nil, fmt.Errorf("first message: %w", err)
	}
	return n, nil
}

// nchanConfig is nginx's whole configuration: Nchan loaded from Debian's module, -workers
// workers, room for every subscriber (nchanLimits), loopback only, no access log, and one
// channel kept to its latest message. A message is published whole from memory (the body
// buffer holds the largest document), never through a temporary file.
func nchanConfig(dir, module string, port, workers, subscribers int) (string, error) {
	files, connections, err := nchanLimits(workers, subscribers)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`# generated by Benchmarks/load/sse-scale: the Nchan peer
load_module "%[1]s";
daemon off;
master_process on;
worker_processes %[2]d;
worker_rlimit_nofile %[3]d;
pid "%[4]s/nginx.pid";
error_log "%[4]s/error.log" notice;
events { worker_connections %[5]d; }
http {
    access_log off;
    client_body_temp_path "%[4]s/client_body";
    proxy_temp_path "%[4]s/proxy";
    fastcgi_temp_path "%[4]s/fastcgi";
    uwsgi_temp_path "%[4]s/uwsgi";
    scgi_temp_path "%[4]s/scgi";
    client_body_buffer_size 16m;
    client_max_body_size 16m;
    server {
        listen 127.0.0.1:%[6]d;
        nchan_channel_id groups;
        nchan_message_buffer_length 1;
        location = %[7]s { nchan_publisher; }
        location = %[8]s {
            nchan_subscriber eventsource;
            nchan_subscriber_first_message oldest;
        }
        location = /healthz { return 200; }
    }
}
`, module, workers, files, dir, connections, port, nchanPublishPath, nchanSubscribePath), nil
}

// nchanLimits are nginx's worker_rlimit_nofile (the hard open-file limit, which nginx
// inherits and cannot raise here) and worker_connections for `subscribers`. nginx starts
// closing idle-looking connections (Nchan's subscribers among them: "worker_connections are
// not enough, reusing connections") once fewer than 1/16 of worker_connections are free, so a
// worker holds 15/16 of it at most. main checks them before the first run.
func nchanLimits(workers, subscribers int) (files, connections int, err error) {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return 0, 0, err
	}
	files = int(limit.Max)
	need := (subscribers+100)*16/15 + 1
	connections = need + 1000
	if connections > files {
		connections = files
	}
	if workers == 1 && connections < need {
		return 0, 0, fmt.Errorf("one nginx worker holds at most %d subscribers (15/16 of worker_connections, at most the open-file limit %d): fewer -subscribers, or more -workers",
			files*15/16-100, files)
	}
	return files, connections, nil
}

// nchanModule is the path of Nchan's dynamic module: the flag's, or the one Debian's
// package installed (`dpkg -L libnginx-mod-nchan`).
func nchanModule(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	out, err := exec.Command("dpkg", "-L", "libnginx-mod-nchan").Output()
	if err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasSuffix(line, "/ngx_nchan_module.so") {
				return line, nil
			}
		}
	}
	return "", fmt.Errorf("Nchan's module not found (dpkg -L libnginx-mod-nchan: %v): install it with scripts/require-packages libnginx-mod-nchan (Benchmarks/sse-scale.sh does), or give -nchan-module PATH", err)
}

func (n *nchanPeer) port() int                   { return n.nginx.Port }
func (n *nchanPeer) paths(shape layout) []string { return []string{nchanSubscribePath} }
func (n *nchanPeer) logTail() string             { return n.nginx.LogTail() }
func (n *nchanPeer) stop()                       { n.nginx.Stop() }

// profilePID is the first worker: with one worker (the default), the process that serves.
func (n *nchanPeer) profilePID() int { return n.workers[0] }

func (n *nchanPeer) rssKiB() int    { return n.overWorkers(harness.ProcessRSSKiB) }
func (n *nchanPeer) cpuTicks() int  { return n.overWorkers(harness.ProcessCPUTicks) }
func (n *nchanPeer) preempted() int { return n.overWorkers(harness.ProcessInvoluntarySwitches) }

// overWorkers sums one figure of each worker process: the workers hold the subscribers.
func (n *nchanPeer) overWorkers(figure func(pid int) int) int {
	total := 0
	for _, pid := range n.workers {
		total += figure(pid)
	}
	return total
}

// check: a worker that died took its subscribers with it (the master starts another, with
// none), and its figures would no longer add up.
func (n *nchanPeer) check() error {
	if !n.nginx.Alive() {
		return fmt.Errorf("nginx exited during the run: %s", n.nginx.LogTail())
	}
	for _, pid := range n.workers {
		if harness.ProcessRSSKiB(pid) < 0 {
			return fmt.Errorf("nginx worker %d exited during the run: %s", pid, n.nginx.LogTail())
		}
	}
	return nil
}

// update publishes what a Tributary subscriber gets for `version`, the upstream's current
// one: in snapshot mode the document; in patch mode the JSON Patch, or the document when the
// patch would not be smaller (as Tributary decides). Both are built before t0.
func (n *nchanPeer) update(version int64) func() error {
	kind, body, _, err := eventOf(n.up, n.patch)
	if err != nil {
		return func() error { return err }
	}
	return func() error { return n.publish(kind, body) }
}

// publish sends one message (one POST); X-EventSource-Event names the event as Tributary
// names its events, which is how the load client tells snapshots from patches.
func (n *nchanPeer) publish(kind, body string) error {
	request, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d%s", n.nginx.Port, nchanPublishPath), bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	request.Header.Set("Content-Type", "application/json")
	request.Header.Set("X-EventSource-Event", kind)
	response, err := n.publisher.Do(request)
	if err != nil {
		return fmt.Errorf("POST %s: %w", nchanPublishPath, err)
	}
	answer, _ := io.ReadAll(response.Body)
	response.Body.Close()
	// 201: published to subscribers, 202: queued (none yet).
	if response.StatusCode != 201 && response.StatusCode != 202 {
		return fmt.Errorf("POST %s: %d %s", nchanPublishPath, response.StatusCode, answer)
	}
	return nil
}

// nchanDir is the nginx directory of one run in the work directory.
func nchanDir(work *harness.Workspace, run int, mode string) string {
	return filepath.Join(work.Dir, fmt.Sprintf("nchan-%d-%s", run, mode))
}
