package main

// The load client: SSE subscribers on raw non-blocking sockets driven by one epoll loop on
// one locked thread (no goroutine per connection), so 10,000 of them cost the client little
// CPU and every arrival is time-stamped when its bytes are read.

import (
	"bytes"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"tributary/benchmarks/load/harness"
)

const (
	stConnecting = iota
	stHeaders
	stChunkSize
	stChunkData
	stChunkEnd
	stPlain
	stClosed
)

type subscriber struct {
	fd        int
	state     int
	raw       []byte // bytes read but not yet parsed (headers, chunk framing)
	left      int    // bytes left in the current chunk
	events    []byte // event-stream text not yet ending in a blank line
	status    int
	snapshots int
	version   int64     // taskCount of the last snapshot
	arrived   time.Time // when the last snapshot was read
	closeWhy  string
}

type client struct {
	epfd           int
	port           int
	request        []byte
	subs           []*subscriber
	byFD           map[int]*subscriber
	next           int // next subscriber to connect
	inFlight       int // connects not yet answered with headers
	maxConn        int // connects in flight at once
	lost           int // subscribers whose stream ended or failed
	events         []syscall.EpollEvent
	buffer         []byte
	target         int64 // the version an update round waits for
	reached        int   // live subscribers whose last snapshot shows `target`
	firstSnapshots int   // subscribers with at least one snapshot
	// Whether the client keeps up: epoll_wait calls, events they returned, and how many
	// returned a full batch (events were waiting: the client was behind).
	waits, waitEvents, fullBatches int
}

func newClient(port, count, maxConnecting int) (*client, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c := &client{
		epfd: epfd, port: port, maxConn: maxConnecting,
		request: harness.GetRequest("/groups", fmt.Sprintf("127.0.0.1:%d", port), "text/event-stream"),
		subs:    make([]*subscriber, count),
		byFD:    make(map[int]*subscriber, count),
		events:  make([]syscall.EpollEvent, 1024),
		buffer:  make([]byte, 65536),
	}
	return c, nil
}

// startConnects opens connections until maxConn are in flight or all are started.
func (c *client) startConnects() error {
	for c.next < len(c.subs) && c.inFlight < c.maxConn {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket (subscriber %d): %w (raise ulimit -n)", c.next, err)
		}
		err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: c.port, Addr: [4]byte{127, 0, 0, 1}})
		if err != nil && err != syscall.EINPROGRESS {
			syscall.Close(fd)
			return fmt.Errorf("connect (subscriber %d): %w", c.next, err)
		}
		s := &subscriber{fd: fd, state: stConnecting}
		c.subs[c.next] = s
		c.byFD[fd] = s
		c.next++
		c.inFlight++
		if err := syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: int32(fd)}); err != nil {
			return err
		}
	}
	return nil
}

// run handles socket events until `done` says so or `deadline` passes (false then).
func (c *client) run(deadline time.Time, done func() bool) (bool, error) {
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
		c.waits++
		c.waitEvents += n
		if n == len(c.events) {
			c.fullBatches++
		}
		for i := 0; i < n; i++ {
			s := c.byFD[int(c.events[i].Fd)]
			if s == nil {
				continue
			}
			if s.state == stConnecting {
				c.connected(s, c.events[i].Events)
			} else {
				c.readable(s)
			}
		}
	}
	return true, nil
}

func (c *client) connected(s *subscriber, events uint32) {
	if soErr, _ := syscall.GetsockoptInt(s.fd, syscall.SOL_SOCKET, syscall.SO_ERROR); soErr != 0 || events&syscall.EPOLLERR != 0 {
		c.fail(s, fmt.Sprintf("connect: %v", syscall.Errno(soErr)))
		return
	}
	if written, err := syscall.Write(s.fd, c.request); err != nil || written != len(c.request) {
		c.fail(s, fmt.Sprintf("write request: %v", err))
		return
	}
	s.state = stHeaders
	syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_MOD, s.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(s.fd)})
}

func (c *client) fail(s *subscriber, why string) {
	if s.state == stClosed {
		return
	}
	if s.state == stConnecting || s.state == stHeaders {
		c.inFlight--
	}
	s.state = stClosed
	s.closeWhy = why
	c.lost++
	syscall.EpollCtl(c.epfd, syscall.EPOLL_CTL_DEL, s.fd, nil)
	syscall.Close(s.fd)
	delete(c.byFD, s.fd)
}

func (c *client) readable(s *subscriber) {
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
		if s.state == stClosed || n < len(c.buffer) {
			return
		}
	}
}

// parse consumes s.raw: the response head, then chunked (or plain) body bytes into events.
func (c *client) parse(s *subscriber, now time.Time) {
	consumed := 0
	defer func() {
		if s.state != stClosed {
			s.raw = s.raw[:copy(s.raw, s.raw[consumed:])]
		}
	}()
	for consumed < len(s.raw) {
		rest := s.raw[consumed:]
		switch s.state {
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
			c.inFlight--
			if bytes.Contains(bytes.ToLower(head), []byte("transfer-encoding: chunked")) {
				s.state = stChunkSize
			} else {
				s.state = stPlain
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
			s.state = stChunkData
		case stChunkData:
			take := len(rest)
			if take > s.left {
				take = s.left
			}
			c.feed(s, rest[:take], now)
			consumed += take
			s.left -= take
			if s.left == 0 {
				s.state = stChunkEnd
			}
		case stChunkEnd:
			if len(rest) < 2 {
				return
			}
			consumed += 2
			s.state = stChunkSize
		case stPlain:
			c.feed(s, rest, now)
			consumed = len(s.raw)
		default:
			return
		}
	}
}

var taskCountKey = []byte(`"taskCount":`)

// feed adds event-stream text and handles every complete event in it.
func (c *client) feed(s *subscriber, text []byte, now time.Time) {
	s.events = append(s.events, text...)
	start := 0
	for {
		end := bytes.Index(s.events[start:], []byte("\n\n"))
		if end < 0 {
			break
		}
		event := s.events[start : start+end]
		start += end + 2
		if !bytes.HasPrefix(event, []byte("event: snapshot\n")) {
			continue
		}
		version := int64(-1)
		if at := bytes.Index(event, taskCountKey); at >= 0 {
			digits := event[at+len(taskCountKey):]
			stop := 0
			for stop < len(digits) && digits[stop] >= '0' && digits[stop] <= '9' {
				stop++
			}
			version, _ = strconv.ParseInt(string(digits[:stop]), 10, 64)
		}
		if s.snapshots == 0 {
			c.firstSnapshots++
		}
		s.snapshots++
		if version == c.target && s.version != c.target {
			c.reached++
		}
		s.version = version
		s.arrived = now
	}
	s.events = s.events[:copy(s.events, s.events[start:])]
}

// closeAll closes every subscriber's socket.
func (c *client) closeAll() {
	for _, s := range c.subs {
		if s != nil && s.state != stClosed {
			syscall.Close(s.fd)
			s.state = stClosed
		}
	}
	c.byFD = map[int]*subscriber{}
	syscall.Close(c.epfd)
}
