package main

// The upstream of the attack rounds: the harness's static nginx fixture (../shared/bench's
// tree and nginx.conf), with the part-3 routes added, started and stopped by PID like every
// other process of the tool.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
	expected string // the fixture's expected.json: what GET /groups must answer
}

// startFixture writes the static fixture of `groups` groups into the workspace
// (harness.WriteStaticFixture: ../shared/bench's tree), adds the part-3 routes, and serves it
// with nginx on a free loopback port (harness.StartStaticUpstream: no delay, one worker), with
// header buffers of 64 KiB (the forwarded attack's 16 KiB Authorization: nginx's default
// refuses a header line over 8 KiB with 400, and the service would answer 502 for every
// forwarded request). nginx is stopped when the workspace closes.
func startFixture(work *harness.Workspace, groups int) (fixture, error) {
	fx, err := harness.WriteStaticFixture(filepath.Join(work.Dir, "tree"), groups)
	if err != nil {
		return fixture{}, err
	}
	for _, route := range fixtureCopies {
		if err := copyFile(filepath.Join(fx.Dir, "groups.json"), filepath.Join(fx.Dir, route, "groups.json")); err != nil {
			return fixture{}, err
		}
		if err := copyTree(filepath.Join(fx.Dir, "groups"), filepath.Join(fx.Dir, route, "groups")); err != nil {
			return fixture{}, err
		}
	}
	nginx, err := work.StartStaticUpstream("fixture", fx, harness.StaticOptions{HeaderBuffers: "4 64k"})
	if err != nil {
		return fixture{}, err
	}
	return fixture{url: fmt.Sprintf("http://127.0.0.1:%d", nginx.Port), pid: nginx.PID(), expected: filepath.Join(fx.Dir, "expected.json")}, nil
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
