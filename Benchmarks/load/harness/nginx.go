package harness

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Nginx is Debian's nginx (/usr/sbin/nginx) in front of a tool's replicas, configured by the
// repository's deployment template (deploy/nginx/tributary.conf.template) rendered as the
// official image renders it, inside a main configuration of the tool's own (as
// Sources/TributaryTesting/NginxProcess.swift does for the tests): daemon off, one worker,
// every file it writes in its directory, its access log in access.log there; or, through
// RunNginx, on a whole configuration of a tool's own (sse-scale's Nchan peer). Stopped by its
// PID.
type Nginx struct {
	Port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartNginx renders the template at templatePath for the replicas' loopback ports, starts
// nginx on a free loopback port with its files in dir (made readable by the worker, which
// drops root for nobody), room for `connections` connections, and waits (≤ 10 s) until it
// answers.
func StartNginx(templatePath, dir string, replicas []int, connections int) (*Nginx, error) {
	template, err := os.ReadFile(templatePath)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	var servers []string
	for _, replica := range replicas {
		servers = append(servers, fmt.Sprintf("server 127.0.0.1:%d;", replica))
	}
	server := strings.NewReplacer(
		"${NGINX_LISTEN}", fmt.Sprintf("127.0.0.1:%d", port),
		"${NGINX_ACCESS_LOG}", filepath.Join(dir, "access.log"),
		"${NGINX_TRIBUTARY_SERVERS}", strings.Join(servers, " "),
	).Replace(string(template))
	if strings.Contains(server, "${") {
		return nil, fmt.Errorf("%s uses a variable this tool does not set", templatePath)
	}
	serverPath := filepath.Join(dir, "tributary.conf")
	if err := os.WriteFile(serverPath, []byte(server), 0o644); err != nil {
		return nil, err
	}
	main := fmt.Sprintf(`daemon off;
worker_processes 1;
worker_rlimit_nofile %[1]d;
pid "%[2]s/nginx.pid";
error_log "%[2]s/error.log" notice;
events { worker_connections %[3]d; }
http {
    client_body_temp_path "%[2]s/client_body";
    proxy_temp_path "%[2]s/proxy";
    fastcgi_temp_path "%[2]s/fastcgi";
    uwsgi_temp_path "%[2]s/uwsgi";
    scgi_temp_path "%[2]s/scgi";
    include "%[4]s";
}
`, 2*connections+64, dir, connections, serverPath)
	return RunNginx(dir, port, main, "/healthz")
}

// FreePort is a free loopback port (for a configuration that names its own listen address).
func FreePort() (int, error) { return freePort() }

// RunNginx starts /usr/sbin/nginx on a main configuration of the caller's, `config` (which
// says daemon off, keeps its pid, error log and temporary files in dir and listens on
// 127.0.0.1:port), written to dir/nginx.conf with dir as its prefix, and waits (≤ 10 s) until
// GET readyPath on the port gets an answer. StartNginx runs the deployment template with it;
// sse-scale runs Nchan with it.
func RunNginx(dir string, port int, config, readyPath string) (*Nginx, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	mainPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(mainPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("/usr/sbin/nginx", "-p", dir+"/", "-c", mainPath, "-e", filepath.Join(dir, "error.log"))
	// SIGTERM, not SIGKILL, if the tool dies: the master then stops its worker too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot run /usr/sbin/nginx (install nginx-light): %w", err)
	}
	n := &Nginx{Port: port, dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(n.exited)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-n.exited:
			return nil, fmt.Errorf("nginx exited at start: %s", n.LogTail())
		default:
		}
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			if status(client, fmt.Sprintf("http://127.0.0.1:%d%s", port, readyPath)) != 0 {
				return n, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.Stop()
	return nil, fmt.Errorf("nginx did not answer within 10 s: %s", n.LogTail())
}

// PID is the master's process id.
func (n *Nginx) PID() int { return n.cmd.Process.Pid }

// Alive reports whether the master has not exited yet.
func (n *Nginx) Alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// WorkerPIDs are the master's children (its worker processes), from /proc, in order: what
// holds the connections, whose RSS and CPU time a tool reads.
func (n *Nginx) WorkerPIDs() []int {
	master := strconv.Itoa(n.cmd.Process.Pid)
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + entry.Name() + "/stat")
		if err != nil {
			continue
		}
		text := string(data)
		fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
		if len(fields) > 1 && fields[1] == master { // state, then the parent's pid
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// LogTail is the last 2,000 bytes of nginx's error log.
func (n *Nginx) LogTail() string {
	data, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return strings.TrimSpace(string(data))
}

// Stop sends SIGTERM to the master (a fast shutdown), then SIGKILL to its process group
// after 5 s, and waits for the exit.
func (n *Nginx) Stop() {
	select {
	case <-n.exited:
		return
	default:
	}
	_ = syscall.Kill(n.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
	}
}
