package main

// The controllable upstream: the `tasks` API's team groups and the `accounts` API's own
// groups, `groups` of each, whose metadata carries the current version as taskCount, so a
// client can tell which update a snapshot shows:
//
//	GET /teams/{team}/groups, /teams/{team}/groups/{id}/metadata    any team
//	GET /me/groups, /me/groups/{id}/metadata                        the caller's (Authorization)
//
// A call to /me/… without an Authorization header is answered 401 and counted: the service
// must forward the client's header on every call a stream causes, refreshes included.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"tributary/benchmarks/load/harness"
)

type upstream struct {
	groups      int
	version     atomic.Int64
	calls       atomic.Int64
	unforwarded atomic.Int64 // /me/… calls without Authorization
	url         string
	server      *http.Server
}

func startUpstream(groups int) (*upstream, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{groups: groups, url: "http://" + listener.Addr().String()}
	u.version.Store(1)
	u.server = &http.Server{Handler: u}
	go u.server.Serve(listener)
	return u, nil
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	segments := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segments) == 3 && segments[0] == "teams" && segments[2] == "groups":
		w.Write([]byte(harness.GroupList(u.groups)))
	case len(segments) == 5 && segments[0] == "teams" && segments[2] == "groups" && segments[4] == "metadata":
		w.Write([]byte(harness.GroupMetadata(u.version.Load())))
	case segments[0] == "me" && r.Header.Get("Authorization") == "":
		u.unforwarded.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"no Authorization"}`))
	case len(segments) == 2 && segments[0] == "me" && segments[1] == "groups":
		user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var body strings.Builder
		body.WriteString(`{"result":[`)
		for i := 0; i < u.groups; i++ {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"id":"group-%04d","name":"%s's group %d"}`, i, user, i)
		}
		body.WriteString(`]}`)
		w.Write([]byte(body.String()))
	case len(segments) == 4 && segments[0] == "me" && segments[1] == "groups" && segments[3] == "metadata":
		w.Write([]byte(harness.GroupMetadata(u.version.Load())))
	default:
		http.NotFound(w, r)
	}
}
