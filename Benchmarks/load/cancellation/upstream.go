package main

// The upstream of the cancellation benchmark, on raw TCP so it sees exactly when Tributary
// closes a connection: `GET /groups` answers `groups` groups at once; `GET
// /groups/{id}/metadata` either answers at once or, in hang mode, never answers and instead
// time-stamps (monotonic clock, this process) the moment the service closes the connection.
// It stays the tool's own rather than harness.Upstream: the time stamp of a close is the
// figure this tool measures, so the goroutine of the hanging call reads the socket itself
// (no hand-off through net/http's context) and counts any byte the service sends there. It
// is built on the harness's raw-TCP server (harness.ServeRequests).

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"tributary/benchmarks/load/harness"
)

type upstream struct {
	url      string
	groups   int
	list     []byte
	hang     atomic.Bool   // metadata calls hang until the service closes them
	record   atomic.Bool   // send hang arrivals and closes to the channels below
	arrived  chan struct{} // a metadata call is hanging (when recording)
	closed   chan time.Time
	hanging  atomic.Int64 // metadata calls hanging now
	calls    atomic.Int64
	oddities atomic.Int64 // bytes received on a hanging call (never expected)
}

func startUpstream(groups int) (*upstream, error) {
	u := &upstream{
		groups:  groups,
		list:    harness.Response(harness.GroupList(groups)),
		arrived: make(chan struct{}, 1<<16), closed: make(chan time.Time, 1<<16),
	}
	listener, err := harness.ServeRequests(u.answer)
	if err != nil {
		return nil, err
	}
	u.url = "http://" + listener.Addr().String()
	return u, nil
}

var metadata = harness.Response(harness.GroupMetadata(3))

// answer answers one request; false closes the connection.
func (u *upstream) answer(conn net.Conn, reader *bufio.Reader, path string) bool {
	u.calls.Add(1)
	var err error
	switch {
	case path == "/groups":
		_, err = conn.Write(u.list)
	case strings.HasPrefix(path, "/groups/") && strings.HasSuffix(path, "/metadata"):
		if u.hang.Load() {
			u.hangUntilClosed(conn, reader)
			return false
		}
		_, err = conn.Write(metadata)
	default:
		_, err = conn.Write(harness.NotFound)
	}
	return err == nil
}

func (u *upstream) hangUntilClosed(conn net.Conn, reader *bufio.Reader) {
	u.hanging.Add(1)
	defer u.hanging.Add(-1)
	recording := u.record.Load()
	if recording {
		u.arrived <- struct{}{}
	}
	// The service's upstream timeout (5 s) closes it if cancellation does not: 15 s is a
	// backstop that keeps this bounded whatever happens.
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err := reader.ReadByte()
	at := time.Now()
	if err == nil {
		u.oddities.Add(1)
	}
	if recording {
		u.closed <- at
	}
}

// writeConfig writes a configuration with only the groups resource on upstream `url`: every
// metadata call of an answer in flight at once (concurrency ≥ groups), upstream timeout 5 s.
func writeConfig(dir, url string) (string, error) {
	return harness.WriteConfig(dir, harness.Config{
		Tool: "cancellation", UpstreamURL: url, Heartbeat: "15s",
		Timeout: "5s", Retries: "1", RefreshInterval: "5s",
	})
}
