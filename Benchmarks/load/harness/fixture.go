package harness

// The tools' scripted upstream over net/http: one fixture with parameters instead of one per
// tool. The raw-TCP upstreams (cancellation's, the soak's) are built from the pieces in
// upstream.go instead: they misbehave below HTTP, where net/http cannot.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// UpstreamOptions is what differs between the tools' upstreams.
type UpstreamOptions struct {
	Groups   int // groups in every list (group-0000 first)
	Changing int // the first Changing groups' metadata carry Version as taskCount; the others 0
	// NameListCalls names the first group of GET /groups after the call ("list call N"), so
	// every refresh is a new snapshot that tells which list call made it (the fleet tools).
	NameListCalls bool
	Topics        []string // GET /topics: these topics, titled after their id ("news": "News")
	Medias        int      // medias on each topic's one page
	// NameTopicCalls titles the first topic after the call ("topics call N"), so every
	// reload of a rows stream is a new snapshot (fleet's triggers).
	NameTopicCalls bool
	// DetailDelay, when set, is how long the metadata of group `id` takes; the answer is
	// dropped if the service closes the call first (first-event's slow group).
	DetailDelay func(id string) time.Duration
	// OnCall, when set, is called with every request's path as it arrives (circuit times them).
	OnCall func(path string)
	// Bodies are answered as they are: GET /NAME gets Bodies[NAME] (json-memory's hostile
	// bodies).
	Bodies map[string][]byte
}

// Upstream is the tools' scripted upstream on a free loopback port, answering what the
// generated configurations (config.go) and the tools' own name:
//
//	GET /groups, /groups/{id}/metadata                 the `tasks` API
//	GET /teams/{team}/groups, …/groups/{id}/metadata   the same for any team (a path parameter)
//	GET /me/groups, /me/groups/{id}/metadata           the caller's own groups, named after its
//	                                                   Authorization; 401 and counted without one
//	GET /topics, /topics/{id}/medias                   the `media` API, one page per topic
//	GET /NAME                                          Bodies[NAME], as it is
//
// While Failing is set, every call is answered 503 (circuit's outage).
type Upstream struct {
	URL         string
	Version     atomic.Int64 // the changing groups' taskCount; starts at 1
	Failing     atomic.Bool
	Calls       atomic.Int64 // every request
	ListCalls   atomic.Int64 // GET /groups
	TopicCalls  atomic.Int64 // GET /topics
	Unforwarded atomic.Int64 // /me/… calls without Authorization (401)
	options     UpstreamOptions
	list        string
	server      *http.Server
}

// StartUpstream serves the fixture on a free loopback port until Close.
func StartUpstream(o UpstreamOptions) (*Upstream, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &Upstream{URL: "http://" + listener.Addr().String(), options: o, list: GroupList(o.Groups)}
	u.Version.Store(1)
	u.server = &http.Server{Handler: u}
	go u.server.Serve(listener)
	return u, nil
}

// Close closes the listener and every connection.
func (u *Upstream) Close() { u.server.Close() }

// Groups is the number of groups in every list.
func (u *Upstream) Groups() int { return u.options.Groups }

// Changing is the number of groups whose metadata carry Version.
func (u *Upstream) Changing() int { return u.options.Changing }

// List is the answer to GET /groups without NameListCalls: GroupList(Groups).
func (u *Upstream) List() string { return u.list }

// Metadata is the answer to GET /groups/group-{index}/metadata: the current version for the
// changing groups, 0 for the others.
func (u *Upstream) Metadata(index int) string {
	if index < u.options.Changing {
		return GroupMetadata(u.Version.Load())
	}
	return GroupMetadata(0)
}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.Calls.Add(1)
	if u.options.OnCall != nil {
		u.options.OnCall(r.URL.Path)
	}
	w.Header().Set("Content-Type", "application/json")
	if u.Failing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"down":true}`))
		return
	}
	if body, ok := u.options.Bodies[strings.TrimPrefix(r.URL.Path, "/")]; ok {
		w.Write(body)
		return
	}
	segments := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segments) == 1 && segments[0] == "groups":
		call, list := u.ListCalls.Add(1), u.list
		if u.options.NameListCalls {
			list = strings.Replace(list, `"Group number 0"`, fmt.Sprintf(`"list call %d"`, call), 1)
		}
		w.Write([]byte(list))
	case len(segments) == 3 && segments[0] == "groups" && segments[2] == "metadata":
		u.details(w, r, segments[1])
	case len(segments) == 3 && segments[0] == "teams" && segments[2] == "groups":
		w.Write([]byte(u.list))
	case len(segments) == 5 && segments[0] == "teams" && segments[2] == "groups" && segments[4] == "metadata":
		u.details(w, r, segments[3])
	case segments[0] == "me" && r.Header.Get("Authorization") == "":
		u.Unforwarded.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"no Authorization"}`))
	case len(segments) == 2 && segments[0] == "me" && segments[1] == "groups":
		user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var body strings.Builder
		body.WriteString(`{"result":[`)
		for i := 0; i < u.options.Groups; i++ {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"id":"group-%04d","name":"%s's group %d"}`, i, user, i)
		}
		body.WriteString(`]}`)
		w.Write([]byte(body.String()))
	case len(segments) == 4 && segments[0] == "me" && segments[1] == "groups" && segments[3] == "metadata":
		u.details(w, r, segments[2])
	case len(segments) == 1 && segments[0] == "topics" && len(u.options.Topics) > 0:
		call := u.TopicCalls.Add(1)
		topics := make([]string, len(u.options.Topics))
		for i, id := range u.options.Topics {
			title := strings.ToUpper(id[:1]) + id[1:]
			if i == 0 && u.options.NameTopicCalls {
				title = fmt.Sprintf("topics call %d", call)
			}
			topics[i] = fmt.Sprintf(`{"id":"%s","title":"%s"}`, id, title)
		}
		w.Write([]byte(`{"result":[` + strings.Join(topics, ",") + `]}`))
	case len(segments) == 3 && segments[0] == "topics" && segments[2] == "medias":
		topic := segments[1]
		medias := make([]string, u.options.Medias)
		for i := range medias {
			medias[i] = fmt.Sprintf(`{"id":"%s-%d","title":"%s number %d"}`, topic, i+1, topic, i+1)
		}
		w.Write([]byte(`{"result":[` + strings.Join(medias, ",") + `],"next":null}`))
	default:
		http.NotFound(w, r)
	}
}

// details answers the metadata of group `id` (GroupList's ids: group-0000, group-0001, …),
// after DetailDelay if there is one.
func (u *Upstream) details(w http.ResponseWriter, r *http.Request, id string) {
	if u.options.DetailDelay != nil {
		select {
		case <-time.After(u.options.DetailDelay(id)):
		case <-r.Context().Done():
			return
		}
	}
	index, _ := strconv.Atoi(strings.TrimPrefix(id, "group-"))
	w.Write([]byte(u.Metadata(index)))
}
