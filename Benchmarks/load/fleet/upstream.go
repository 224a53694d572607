package main

// The scripted upstream: the `tasks` and `media` APIs, counting what they are asked.
//
//   - GET /groups counts list calls and names its first group after the call ("list call N"),
//     so every refresh is a new snapshot and a snapshot tells which list call made it;
//   - GET /groups/{id}/metadata answers taskCount = the current version, which the tool
//     raises before each timed update (the load client reads it, as sse-scale's does);
//   - GET /topics (one topic, its title naming the call) and GET /topics/t1/medias (one page)
//     make every reload of a /rows stream a new snapshot.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"tributary/benchmarks/load/harness"
)

type upstream struct {
	groups     int
	listCalls  atomic.Int64
	topicCalls atomic.Int64
	version    atomic.Int64
	url        string
}

func startUpstream(groups int) (*upstream, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{groups: groups, url: "http://" + listener.Addr().String()}
	u.version.Store(1)
	go (&http.Server{Handler: u}).Serve(listener)
	return u, nil
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case path == "/groups":
		call := u.listCalls.Add(1)
		list := harness.GroupList(u.groups)
		w.Write([]byte(strings.Replace(list, `"Group number 0"`, fmt.Sprintf(`"list call %d"`, call), 1)))
	case strings.HasPrefix(path, "/groups/") && strings.HasSuffix(path, "/metadata"):
		w.Write([]byte(harness.GroupMetadata(u.version.Load())))
	case path == "/topics":
		call := u.topicCalls.Add(1)
		fmt.Fprintf(w, `{"result":[{"id":"t1","title":"topics call %d"}]}`, call)
	case path == "/topics/t1/medias":
		w.Write([]byte(`{"result":[{"id":"m1","title":"one"}],"next":null}`))
	default:
		http.NotFound(w, r)
	}
}
