package harness

// SSEClients: live subscribers of an event stream on raw non-blocking sockets driven by one
// epoll loop on the calling thread (no goroutine per connection), so 10,000 of them cost the
// load client little CPU and every arrival is time-stamped when its bytes are read. A
// snapshot's version is the first "taskCount" in its data (the tools' upstreams put the
// current version there, in the first group at least); snapshots without one (rows) count,
// but carry no version. A patch (`?updates=patch`) carries the version as the value of the
// first operation on a taskCount, `.../taskCount","value":N`. Used
// by sse-scale (one service; one resource per stream, or several over /events) and fleet
// (several replicas: the subscribers are spread over their ports in turn).

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	StConnecting = iota
	stHeaders
	stChunkSize
	stChunkData
	stChunkEnd
	stPlain
	StClosed
)

// Subscriber is one live stream.
type Subscriber struct {
	fd        int
	State     int
	raw       []byte // bytes read but not yet parsed (headers, chunk framing)
	left      int    // bytes left in the current chunk
	events    []byte // event-stream text not yet ending in a blank line
	status    int
	Snapshots int
	Version   int64     // taskCount of the last snapshot that had one
	Arrived   time.Time // when that snapshot was read
	CloseWhy  string
	Port      int    // the service's port it is connected to
	Path      string // what it asked for, e.g. /groups or /events?resource=groups&resource=rows
	Header    string // more request header lines it sends ("Name: value\r\n"), if any
	wanted    int    // snapshots that make it ready: one per resource its stream carries
	LastError string // the data of the last error event (a refresh failed), if any
	// The bytes of the event that brought the latest version (with its blank line), and its kind.
	UpdateBytes int
	UpdateKind  string
}

// SSEClients is the whole set of subscribers and their epoll loop; use it from one goroutine.
type SSEClients struct {
	epfd  int
	ports []int
	paths []string
	// Headers, if set, are more request header lines ("Authorization: Bearer x\r\n"): the i-th
	// subscriber sends Headers[i % len(Headers)] (set before Run).
	Headers []string
	Subs    []*Subscriber
	byFD    map[int]*Subscriber
	Next    int // next subscriber to connect
	// Subscribers connecting: not yet ready (headers and a first snapshot of each resource in)
	// nor failed. A subscriber's first snapshot may cost the service upstream calls (a /rows
	// view of its own): bounding these bounds that work too, not only the connects.
	inFlight       int
	maxConn        int // connects in flight at once
	Lost           int // subscribers whose stream ended or failed
	events         []syscall.EpollEvent
	buffer         []byte
	Target         int64 // the version an update round waits for
	Reached        int   // live subscribers whose last snapshot shows Target
	FirstSnapshots int   // subscribers with a first snapshot of every resource their stream carries
	Errors         int   // error events received (a refresh of a stream's resource failed)
	Updates        int   // snapshot and patch events received, first snapshots included
	// Whether the client keeps up: epoll_wait calls, events they returned, and how many
	// returned a full batch (events were waiting: the client was behind).
	Waits, WaitEvents, FullBatches int
}

// NewSSEClients prepares `count` subscribers, the i-th of paths[i % len(paths)] (e.g.
// /groups, or /events?resource=groups&resource=rows) on ports[i % len(ports)] of 127.0.0.1,
// with at most maxConnecting of them connecting at once (until ready); Run connects them.
func NewSSEClients(ports []int, paths []string, count, maxConnecting int) (*SSEClients, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c := &SSEClients{
		epfd: epfd, ports: ports, paths: paths, maxConn: maxConnecting,
		Subs:   make([]*Subscriber, count),
		byFD:   make(map[int]*Subscriber, count),
		events: make([]syscall.EpollEvent, 1024),
		buffer: make([]byte, 65536),
	}
	return c, nil
}

// startConnects opens connections until maxConn are in flight or all are started.
func (c *SSEClients) startConnects() error {
	for c.Next < len(c.Subs) && c.inFlight < c.maxConn {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket (subscriber %d): %w (raise ulimit -n)", c.Next, err)
		}
		path := c.paths[c.Next%len(c.paths)]
		wanted := strings.Count(path, "resource=")
		if wanted == 0 {
			wanted = 1
		}
		s := &Subscriber{fd: fd, State: StConnecting, Port: c.ports[c.Next%len(c.ports)], Path: path, wanted: wanted}
		if len(c.Headers) > 0 {
			s.Header = c.Headers[c.Next%len(c.Headers)]
		}
		err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: s.Port, Addr: [4]byte{127, 0, 0, 1}})
		if err != nil && err != syscall.EINPROGRESS {
			syscall.Close(fd)
			return fmt.Errorf("connect (subscriber %d): %w", c.Next, err)
		}
		c.Subs[c.Next] = s
		c.byFD[fd] = s
		c.Next++
		c.inFlight++
		if err := syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: int32(fd)}); err != nil {
			return err
		}
	}
	return nil
}

// Run handles socket events until `done` says so or `deadline` passes (false then).
func (c *SSEClients) Run(deadline time.Time, done func() bool) (bool, error) {
	for !done() {
		if err := c.startConnects(); err != nil {
			return false, err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false, nil
		}
		if wait > 100*time.Millisecond {
			wait = 100 * time.Millisecond
		}
		n, err := syscall.EpollWait(c.epfd, c.events, int(wait/time.Millisecond)+1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		c.Waits++
		c.WaitEvents += n
		if n == len(c.events) {
			c.FullBatches++
		}
		for i := 0; i < n; i++ {
			s := c.byFD[int(c.events[i].Fd)]
			if s == nil {
				continue
			}
			if s.State == StConnecting {
				c.connected(s, c.events[i].Events)
			} else {
				c.readable(s)
			}
		}
	}
	return true, nil
}

func (c *SSEClients) connected(s *Subscriber, events uint32) {
	if soErr, _ := syscall.GetsockoptInt(s.fd, syscall.SOL_SOCKET, syscall.SO_ERROR); soErr != 0 || events&syscall.EPOLLERR != 0 {
		c.fail(s, fmt.Sprintf("connect: %v", syscall.Errno(soErr)))
		return
	}
	request := GetRequestWith(s.Path, fmt.Sprintf("127.0.0.1:%d", s.Port), "text/event-stream", s.Header)
	if written, err := syscall.Write(s.fd, request); err != nil || written != len(request) {
		c.fail(s, fmt.Sprintf("write request: %v", err))
		return
	}
	s.State = stHeaders
	syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_MOD, s.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(s.fd)})
}

func (c *SSEClients) fail(s *Subscriber, why string) {
	if s.State == StClosed {
		return
	}
	if s.Snapshots < s.wanted {
		c.inFlight--
	}
	s.State = StClosed
	s.CloseWhy = why
	c.Lost++
	syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_DEL, s.fd, nil)
	syscall.Close(s.fd)
	delete(c.byFD, s.fd)
}

func (c *SSEClients) readable(s *Subscriber) {
	for {
		n, err := syscall.Read(s.fd, c.buffer)
		if err == syscall.EAGAIN {
			return
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			c.fail(s, "read: "+err.Error())
			return
		}
		if n == 0 {
			c.fail(s, "closed by the server")
			return
		}
		now := time.Now()
		s.raw = append(s.raw, c.buffer[:n]...)
		c.parse(s, now)
		if s.State == StClosed || n < len(c.buffer) {
			return
		}
	}
}

// parse consumes s.raw: the response head, then chunked (or plain) body bytes into events.
func (c *SSEClients) parse(s *Subscriber, now time.Time) {
	consumed := 0
	defer func() {
		if s.State != StClosed {
			s.raw = s.raw[:copy(s.raw, s.raw[consumed:])]
		}
	}()
	for consumed < len(s.raw) {
		rest := s.raw[consumed:]
		switch s.State {
		case stHeaders:
			end := bytes.Index(rest, []byte("\r\n\r\n"))
			if end < 0 {
				return
			}
			head := rest[:end]
			consumed += end + 4
			if len(head) < 12 {
				c.fail(s, "short status line")
				return
			}
			s.status, _ = strconv.Atoi(string(head[9:12]))
			if s.status != 200 {
				c.fail(s, fmt.Sprintf("status %d", s.status))
				return
			}
			if bytes.Contains(bytes.ToLower(head), []byte("transfer-encoding: chunked")) {
				s.State = stChunkSize
			} else {
				s.State = stPlain
			}
		case stChunkSize:
			end := bytes.Index(rest, []byte("\r\n"))
			if end < 0 {
				return
			}
			line := rest[:end]
			if semicolon := bytes.IndexByte(line, ';'); semicolon >= 0 {
				line = line[:semicolon]
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil {
				c.fail(s, "bad chunk size")
				return
			}
			consumed += end + 2
			if size == 0 {
				c.fail(s, "stream ended by the server")
				return
			}
			s.left = int(size)
			s.State = stChunkData
		case stChunkData:
			take := len(rest)
			if take > s.left {
				take = s.left
			}
			c.feed(s, rest[:take], now)
			consumed += take
			s.left -= take
			if s.left == 0 {
				s.State = stChunkEnd
			}
		case stChunkEnd:
			if len(rest) < 2 {
				return
			}
			consumed += 2
			s.State = stChunkSize
		case stPlain:
			c.feed(s, rest, now)
			consumed = len(s.raw)
		default:
			return
		}
	}
}

var taskCountKey = []byte(`"taskCount":`)
var patchedTaskCountKey = []byte(`taskCount","value":`)

// feed adds event-stream text and handles every complete event in it.
func (c *SSEClients) feed(s *Subscriber, text []byte, now time.Time) {
	s.events = append(s.events, text...)
	start := 0
	for {
		end := bytes.Index(s.events[start:], []byte("\n\n"))
		if end < 0 {
			break
		}
		event := s.events[start : start+end]
		start += end + 2
		if bytes.HasPrefix(event, []byte("event: error\n")) {
			c.Errors++
			if at := bytes.Index(event, []byte("data: ")); at >= 0 {
				s.LastError = string(event[at+6:])
			}
			continue
		}
		isPatch := bytes.HasPrefix(event, []byte("event: patch\n"))
		if !isPatch && !bytes.HasPrefix(event, []byte("event: snapshot\n")) {
			continue
		}
		key := taskCountKey
		if isPatch {
			key = patchedTaskCountKey
		}
		version := int64(-1)
		if at := bytes.Index(event, key); at >= 0 {
			digits := event[at+len(key):]
			stop := 0
			for stop < len(digits) && digits[stop] >= '0' && digits[stop] <= '9' {
				stop++
			}
			version, _ = strconv.ParseInt(string(digits[:stop]), 10, 64)
		}
		c.Updates++
		if !isPatch {
			s.Snapshots++
			if s.Snapshots == s.wanted {
				c.FirstSnapshots++
				c.inFlight--
			}
		}
		if version < 0 {
			continue
		}
		if version == c.Target && s.Version != c.Target {
			c.Reached++
		}
		s.Version = version
		s.Arrived = now
		s.UpdateBytes = len(event) + 2
		s.UpdateKind = "snapshot"
		if isPatch {
			s.UpdateKind = "patch"
		}
	}
	s.events = s.events[:copy(s.events, s.events[start:])]
}

// CloseAll closes every subscriber's socket.
func (c *SSEClients) CloseAll() {
	for _, s := range c.Subs {
		if s != nil && s.State != StClosed {
			syscall.Close(s.fd)
			s.State = StClosed
		}
	}
	c.byFD = map[int]*Subscriber{}
	syscall.Close(c.epfd)
}
