package main

// The soak's upstream, on raw TCP so it can misbehave at the socket level: the `tasks` API
// (`GET /groups`, `GET /groups/{id}/metadata`, data changing every 2 s) that injects a fault
// into a fraction of the requests, chosen at random and counted by kind and by call:
//
//	reset    read the request, then close with SO_LINGER 0: the service sees a TCP reset
//	hang     never answer; close after 3 s (beyond the service's 1 s upstream timeout)
//	garbage  200 with a body that is not JSON (random bytes, or JSON cut short)
//	slow     answer correctly after 100-700 ms (inside the timeout: must cause no error)
//
// It stays the tool's own rather than harness.Upstream: its faults, chosen from one seeded
// random source and counted by kind and call, are what the soak checks every answer against,
// and a reset is a socket option on the raw connection. It is built on the harness's raw-TCP
// server (harness.ServeRequests).

import (
	"bufio"
	"math/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tributary/benchmarks/load/harness"
)

const (
	faultNone = iota
	faultReset
	faultHang
	faultGarbage
	faultSlow
	faultKinds
)

var faultNames = [faultKinds]string{"none", "reset", "hang", "garbage", "slow"}

const (
	callList = iota
	callMetadata
	callKinds
)

type upstream struct {
	url      string
	groups   int
	rate     float64 // fraction of requests that get a fault
	version  atomic.Int64
	injected [callKinds][faultKinds]atomic.Int64
	calls    [callKinds]atomic.Int64
	hanging  atomic.Int64
	mutex    sync.Mutex
	random   *rand.Rand
}

func startUpstream(groups int, rate float64, seed int64) (*upstream, error) {
	u := &upstream{groups: groups, rate: rate, random: rand.New(rand.NewSource(seed))}
	u.version.Store(1)
	listener, err := harness.ServeRequests(u.answer)
	if err != nil {
		return nil, err
	}
	u.url = "http://" + listener.Addr().String()
	go func() {
		for range time.Tick(2 * time.Second) {
			u.version.Add(1)
		}
	}()
	return u, nil
}

// fault picks this request's fault (none most of the time), with its parameter in [0, 1).
func (u *upstream) fault() (int, float64) {
	u.mutex.Lock()
	defer u.mutex.Unlock()
	if u.random.Float64() >= u.rate {
		return faultNone, 0
	}
	return 1 + u.random.Intn(faultKinds-1), u.random.Float64()
}

// answer answers one request, or injects a fault into it; false closes the connection.
func (u *upstream) answer(conn net.Conn, reader *bufio.Reader, path string) bool {
	var call int
	var body string
	switch {
	case path == "/groups":
		call = callList
		body = harness.GroupList(u.groups)
	case strings.HasPrefix(path, "/groups/") && strings.HasSuffix(path, "/metadata"):
		call = callMetadata
		body = harness.GroupMetadata(u.version.Load())
	default:
		conn.Write(harness.NotFound)
		return true
	}
	u.calls[call].Add(1)
	fault, parameter := u.fault()
	u.injected[call][fault].Add(1)
	switch fault {
	case faultReset:
		conn.(*net.TCPConn).SetLinger(0)
		return false
	case faultHang:
		u.hanging.Add(1)
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		reader.ReadByte() // until the service closes, or 3 s
		u.hanging.Add(-1)
		return false
	case faultGarbage:
		if parameter < 0.5 {
			garbage := make([]byte, 64+int(parameter*512))
			rand.Read(garbage)
			body = string(garbage)
		} else {
			body = body[:len(body)/2]
		}
	case faultSlow:
		time.Sleep(100*time.Millisecond + time.Duration(parameter*float64(600*time.Millisecond)))
	}
	_, err := conn.Write(harness.Response(body))
	return err == nil
}

// writeConfig: the groups resource on the faulty upstream, 1 s upstream timeout (so hangs
// resolve fast), one retry after 50 ms, items that fail marked, live refresh every second,
// heartbeats every 2 s.
func writeConfig(dir, url string) (string, error) {
	return harness.WriteConfig(dir, harness.Config{
		Tool: "soak", UpstreamURL: url, Heartbeat: "2s",
		Timeout: "1s", Retries: "1", Backoff: "50ms", RefreshInterval: "1s", OnItemFailure: "mark",
		// The checks hold each JSON 5xx and each failed item to one injected fault: with
		// coalescing, one fault would reach every client of a run.
		NoCoalescing: true,
	})
}
