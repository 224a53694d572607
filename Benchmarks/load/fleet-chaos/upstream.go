package main

// The scripted upstream: GET /groups names its first group after the list call ("list call
// N"), so every refresh is a new snapshot and a subscriber can tell the upstream's document
// from any other; GET /groups/{id}/metadata answers a fixed detail.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"tributary/benchmarks/load/harness"
)

type upstream struct {
	listCalls atomic.Int64
	url       string
}

func startUpstream() (*upstream, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{url: "http://" + listener.Addr().String()}
	go (&http.Server{Handler: u}).Serve(listener)
	return u, nil
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch path := r.URL.Path; {
	case path == "/groups":
		call := u.listCalls.Add(1)
		w.Write([]byte(strings.Replace(harness.GroupList(10), `"Group number 0"`, fmt.Sprintf(`"list call %d"`, call), 1)))
	case strings.HasPrefix(path, "/groups/") && strings.HasSuffix(path, "/metadata"):
		w.Write([]byte(harness.GroupMetadata(1)))
	default:
		http.NotFound(w, r)
	}
}
