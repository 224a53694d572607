package main

// The controllable upstream: the `tasks` API with `groups` groups whose metadata carries the
// current version as taskCount (the first `changing` groups; the others keep 0), so a client
// can tell which update a snapshot or patch shows; and the `media` API, for rows: two topics
// of four medias each, one page, never changing.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"tributary/benchmarks/load/harness"
)

type upstream struct {
	groups   int
	changing int
	version  atomic.Int64
	calls    atomic.Int64
	url      string
	server   *http.Server
}

func startUpstream(groups, changing int) (*upstream, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{groups: groups, changing: changing, url: "http://" + listener.Addr().String()}
	u.version.Store(1)
	u.server = &http.Server{Handler: u}
	go u.server.Serve(listener)
	return u, nil
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case path == "/groups":
		w.Write([]byte(harness.GroupList(u.groups)))
	case strings.HasPrefix(path, "/groups/") && strings.HasSuffix(path, "/metadata"):
		// harness.GroupList's ids: group-0000, group-0001, …
		index, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(path, "/metadata"), "/groups/group-"))
		w.Write([]byte(u.metadata(index)))
	case path == "/topics":
		w.Write([]byte(`{"result":[{"id":"news","title":"News"},{"id":"films","title":"Films"}]}`))
	case strings.HasPrefix(path, "/topics/") && strings.HasSuffix(path, "/medias"):
		topic := strings.TrimSuffix(strings.TrimPrefix(path, "/topics/"), "/medias")
		var medias []string
		for i := 1; i <= 4; i++ {
			medias = append(medias, fmt.Sprintf(`{"id":"%s-%d","title":"%s number %d"}`, topic, i, topic, i))
		}
		w.Write([]byte(`{"result":[` + strings.Join(medias, ",") + `],"next":null}`))
	default:
		http.NotFound(w, r)
	}
}

// metadata is the answer to GET /groups/group-{index}/metadata: the current version for the
// changing groups, 0 for the others.
func (u *upstream) metadata(index int) string {
	if index < u.changing {
		return harness.GroupMetadata(u.version.Load())
	}
	return harness.GroupMetadata(0)
}

// document is the /groups snapshot Tributary makes of this upstream's current data: for each
// listed group, its members followed by those of its metadata's `result` (the list resource's
// merge), compact, in the list's order. The Nchan peer publishes it, so its subscribers get
// the document Tributary's get, byte for byte.
func (u *upstream) document() (string, error) {
	var list struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(harness.GroupList(u.groups)), &list); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, item := range list.Result {
		var details struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(u.metadata(i)), &details); err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(bytes.TrimSuffix(item, []byte("}")))
		b.WriteByte(',')
		b.Write(bytes.TrimPrefix(details.Result, []byte("{")))
	}
	b.WriteByte(']')
	return b.String(), nil
}

// patch is the JSON Patch Tributary sends from the previous version to the current one: the
// changing groups' taskCount replaced, the first group's first (where the load client reads
// the version).
// event is what a Tributary subscriber gets for the current version, as Tributary decides it:
// the document, or with patches asked for the JSON Patch when it is smaller. The peers that
// are fed by the tool (Nchan, the floor) send exactly this.
func (u *upstream) event(patches bool) (kind, body, document string, err error) {
	document, err = u.document()
	if err != nil {
		return "", "", "", err
	}
	kind, body = "snapshot", document
	if patch := u.patch(); patches && len(patch) < len(document) {
		kind, body = "patch", patch
	}
	return kind, body, document, nil
}

func (u *upstream) patch() string {
	ops := make([]string, u.changing)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"replace","path":"/%d/taskCount","value":%d}`, i, u.version.Load())
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// writeConfig writes a configuration with the groups resource (and with rows, the rows
// resource) on upstream `url`, limits high enough for `connections` connections carrying
// `streams` live streams (the defaults with defaultLimits), and no interval refresh
// (updates come only from POST /groups/reload), so every snapshot a client sees is one we
// caused. With rows, every subscriber's rows are a pipeline of its own that makes three
// upstream calls as it starts; subscribers connect faster than 64 connections answer them,
// so the queue for an upstream connection is made long enough for all of them (the default
// of 10,000 would answer some 503 upstream_saturated: this tool measures streams, not that).
func writeConfig(dir, url string, connections, streams int, rows, defaultLimits bool) (string, error) {
	maxConnections, maxSubscribers := connections+1000, streams+1000
	if defaultLimits {
		// Left out: server.maxConnections and sse.maxSubscribers keep their defaults.
		maxConnections, maxSubscribers = 0, 0
	}
	return harness.WriteConfig(dir, harness.Config{
		Tool: "sse-scale", UpstreamURL: url, MaxConnections: maxConnections, MaxSubscribers: maxSubscribers,
		Timeout: "5s", RefreshInterval: "1h", Rows: rows, MediaMaxQueue: mediaQueue(rows, streams),
	})
}

func mediaQueue(rows bool, streams int) int {
	if !rows {
		return 0
	}
	return 3*streams + 1000
}
