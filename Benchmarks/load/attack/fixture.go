package main

// The upstream of the attack rounds: the static nginx fixture of ../shared/bench (its gen.py
// tree and nginx.conf, as its run-upstream.sh renders them), started and stopped here, by
// PID, like every other process of the tool.

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"tributary/benchmarks/load/harness"
)

// The part-3 attacks' routes on the same fixture: /me/groups (the forwarded resource) and
// /teams/T/groups for a few teams, among them the look-alikes the params attack sends (K and
// the Kelvin sign, NFC and NFD é: distinct files, as they are distinct values).
var fixtureCopies = []string{"me", "teams/core", "teams/K", "teams/\u212a", "teams/\u00e9", "teams/e\u0301"}

// fixture is the running nginx fixture.
type fixture struct {
	url      string // http://127.0.0.1:PORT
	pid      int    // nginx's master
	expected string // gen.py's expected.json: what GET /groups must answer
}

// startFixture writes bench's fixture of `groups` groups into the workspace (python3
// bench/upstream/gen.py), adds the part-3 routes, and serves it with /usr/sbin/nginx on a free
// loopback port: bench/upstream/nginx.conf with no delay, one worker, daemon off, and header
// buffers of 64 KiB (the forwarded attack's 16 KiB Authorization: nginx's default refuses a
// header line over 8 KiB with 400, and the service would answer 502 for every forwarded
// request). nginx is stopped when the workspace closes.
func startFixture(work *harness.Workspace, bench string, groups int) (fixture, error) {
	dir := filepath.Join(work.Dir, "fixture")
	root := filepath.Join(dir, "tree")
	generate := exec.Command("python3", filepath.Join(bench, "upstream", "gen.py"), fmt.Sprint(groups), root)
	if output, err := generate.CombinedOutput(); err != nil {
		return fixture{}, fmt.Errorf("%s: %v: %s", generate, err, output)
	}
	for _, route := range fixtureCopies {
		if err := copyFile(filepath.Join(root, "groups.json"), filepath.Join(root, route, "groups.json")); err != nil {
			return fixture{}, err
		}
		if err := copyTree(filepath.Join(root, "groups"), filepath.Join(root, route, "groups")); err != nil {
			return fixture{}, err
		}
	}
	template, err := os.ReadFile(filepath.Join(bench, "upstream", "nginx.conf"))
	if err != nil {
		return fixture{}, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return fixture{}, err
	}
	var limit syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)
	if limit.Max > 1<<20 {
		limit.Max = 65536 // run-upstream.sh's figure for "unlimited"
	}
	config := strings.NewReplacer(
		"@LOAD_ECHO@", "", "@WORKERS@", "1", "@PREFIX@", dir, "@DAEMON@", "off", "@PORT@", fmt.Sprint(port),
		"@ROOT@", root, "@DELAY_S@", "0", "@NOFILE@", fmt.Sprint(limit.Max), "#NODELAY# ", "",
	).Replace(string(template))
	config = strings.Replace(config, "\nhttp {", "\nhttp {\n    large_client_header_buffers 4 64k;", 1)
	// nginx's worker runs as nobody: the tree must be readable, the workspace passable.
	os.Chmod(work.Dir, 0o711)
	if err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return os.Chmod(path, 0o644)
	}); err != nil {
		return fixture{}, err
	}
	nginx, err := harness.RunNginx(dir, port, config, "/groups")
	if err != nil {
		return fixture{}, err
	}
	work.OnClose(nginx.Stop)
	return fixture{url: fmt.Sprintf("http://127.0.0.1:%d", port), pid: nginx.PID(), expected: filepath.Join(root, "expected.json")}, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		relative, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		return copyFile(path, filepath.Join(to, relative))
	})
}
