package main

// What Tributary makes of the tool's upstream (harness.Upstream: `groups` groups whose
// metadata carries the version as taskCount, the first `changing` of them, the others 0; and
// for rows two topics of four medias each, one page, never changing), which the peers fed by
// the tool (Nchan, the floor) send as it is; and the configuration of the service under test.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"tributary/benchmarks/load/harness"
)

// startUpstream starts the tool's upstream: `groups` groups, the first `changing` carrying
// the version, and the rows resource's topics.
func startUpstream(groups, changing int) (*harness.Upstream, error) {
	return harness.StartUpstream(harness.UpstreamOptions{
		Groups: groups, Changing: changing, Topics: []string{"news", "films"}, Medias: 4,
	})
}

// documentOf is the /groups snapshot Tributary makes of this upstream's current data: for each
// listed group, its members followed by those of its metadata's `result` (the list resource's
// merge), compact, in the list's order. The Nchan peer publishes it, so its subscribers get
// the document Tributary's get, byte for byte.
func documentOf(u *harness.Upstream) (string, error) {
	var list struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(u.List()), &list); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, item := range list.Result {
		var details struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(u.Metadata(i)), &details); err != nil {
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

// eventOf is what a Tributary subscriber gets for the current version, as Tributary decides it:
// the document, or with patches asked for the JSON Patch when it is smaller. The peers that
// are fed by the tool (Nchan, the floor) send exactly this.
func eventOf(u *harness.Upstream, patches bool) (kind, body, document string, err error) {
	document, err = documentOf(u)
	if err != nil {
		return "", "", "", err
	}
	kind, body = "snapshot", document
	if patch := patchOf(u); patches && len(patch) < len(document) {
		kind, body = "patch", patch
	}
	return kind, body, document, nil
}

// patchOf is the JSON Patch Tributary sends from the previous version to the current one:
// the changing groups' taskCount replaced, the first group's first (where the load client
// reads the version).
func patchOf(u *harness.Upstream) string {
	ops := make([]string, u.Changing())
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"replace","path":"/%d/taskCount","value":%d}`, i, u.Version.Load())
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
