package main

// The /groups subscribers, one goroutine each (1,000 are few for Go): each reads its
// text/event-stream through nginx, checks every snapshot (valid JSON, the upstream's own
// document, no forger's mark), notes the longest time between two snapshots within the run,
// and reconnects when its stream ends (a killed replica's streams end at nginx), the gap
// spanning the reconnect.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

type subscriber struct {
	mu         sync.Mutex
	last       time.Time // the last snapshot's arrival
	maxGap     time.Duration
	longGaps   []gap // gaps of more than longGap, for the report by event
	snapshots  int
	reconnects int
	conn       net.Conn
}

// longGap: gaps longer than this are kept with when they ended.
const longGap = 1500 * time.Millisecond

type gap struct {
	ended  time.Time
	length time.Duration
}

type subscribers struct {
	port           int
	reconnectAfter time.Duration
	all            []*subscriber
	done           chan struct{}
	forged         atomic.Int64
	// The run's window: gaps count only within it.
	windowMu   sync.Mutex
	windowFrom time.Time
	windowTo   time.Time
}

func newSubscribers(port, count int, reconnectAfter time.Duration) *subscribers {
	s := &subscribers{port: port, reconnectAfter: reconnectAfter, done: make(chan struct{})}
	for i := 0; i < count; i++ {
		s.all = append(s.all, &subscriber{})
	}
	return s
}

// start connects them, 50 at a time.
func (s *subscribers) start() {
	gate := make(chan struct{}, 50)
	for _, sub := range s.all {
		go s.follow(sub, gate)
	}
}

func (s *subscribers) stop() {
	close(s.done)
	for _, sub := range s.all {
		sub.mu.Lock()
		if sub.conn != nil {
			sub.conn.Close()
		}
		sub.mu.Unlock()
	}
}

func (s *subscribers) stopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// follow keeps one subscriber connected until the tool stops; its place in `gate` (the
// connects in flight) is given up at its first snapshot.
func (s *subscribers) follow(sub *subscriber, gate chan struct{}) {
	gate <- struct{}{}
	released := false
	release := func() {
		if !released {
			released = true
			<-gate
		}
	}
	for !s.stopped() {
		s.stream(sub, release)
		release()
		if s.stopped() {
			return
		}
		sub.mu.Lock()
		sub.reconnects++
		sub.mu.Unlock()
		time.Sleep(s.reconnectAfter)
	}
}

// stream reads one connection's events until it ends (why, as an error); ready runs after
// each snapshot.
func (s *subscribers) stream(sub *subscriber, ready func()) error {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 5*time.Second)
	if err != nil {
		return err
	}
	sub.mu.Lock()
	sub.conn = conn
	sub.mu.Unlock()
	defer conn.Close()
	request := fmt.Sprintf("GET /groups HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n", s.port)
	if _, err := conn.Write([]byte(request)); err != nil {
		return err
	}
	reader := bufio.NewReaderSize(conn, 1<<16)
	chunked := false
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			return err
		}
		if bytes.HasPrefix(bytes.ToLower([]byte(line)), []byte("transfer-encoding: chunked")) {
			chunked = true
		}
		if line == "\r\n" {
			break
		}
	}
	body := &eventReader{reader: reader, chunked: chunked}
	var kind string
	var data []byte
	for {
		line, err := body.line()
		if err != nil {
			return err
		}
		switch {
		case len(line) == 0:
			if kind == "snapshot" {
				s.snapshot(sub, data)
				ready()
			}
			kind, data = "", nil
		case bytes.HasPrefix(line, []byte("event: ")):
			kind = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, line[len("data: "):]...)
		}
	}
}

var (
	upstreamMark = []byte(`"list call `)
	forgerMark   = []byte(forgeryMark)
)

// snapshot checks a snapshot and notes when it came.
func (s *subscribers) snapshot(sub *subscriber, data []byte) {
	now := time.Now()
	if !json.Valid(data) || !bytes.Contains(data, upstreamMark) || bytes.Contains(data, forgerMark) {
		s.forged.Add(1)
	}
	s.windowMu.Lock()
	from, to := s.windowFrom, s.windowTo
	s.windowMu.Unlock()
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if !from.IsZero() && (to.IsZero() || now.Before(to)) {
		start := sub.last
		if start.Before(from) {
			start = from
		}
		length := now.Sub(start)
		if length > sub.maxGap {
			sub.maxGap = length
		}
		if length > longGap {
			sub.longGaps = append(sub.longGaps, gap{ended: now, length: length})
		}
	}
	sub.last = now
	sub.snapshots++
}

func (s *subscribers) beginWindow(at time.Time) {
	s.windowMu.Lock()
	s.windowFrom = at
	s.windowMu.Unlock()
	for _, sub := range s.all {
		sub.mu.Lock()
		sub.snapshots, sub.reconnects = 0, 0
		sub.mu.Unlock()
	}
}

// endWindow closes the run's window; a subscriber's time since its last snapshot counts as
// a gap too.
func (s *subscribers) endWindow(at time.Time) {
	s.windowMu.Lock()
	s.windowTo = at
	s.windowMu.Unlock()
	for _, sub := range s.all {
		sub.mu.Lock()
		if length := at.Sub(sub.last); length > sub.maxGap {
			sub.maxGap = length
		}
		sub.mu.Unlock()
	}
}

func (s *subscribers) snapshotted() int {
	count := 0
	for _, sub := range s.all {
		sub.mu.Lock()
		if sub.snapshots > 0 {
			count++
		}
		sub.mu.Unlock()
	}
	return count
}

func (s *subscribers) waitAllSnapshotted(limit time.Duration) bool {
	return waitFor(limit, func() bool { return s.snapshotted() == len(s.all) })
}

// waitAllSnapshottedSince waits until every subscriber has had a snapshot after `since`.
func (s *subscribers) waitAllSnapshottedSince(since time.Time, limit time.Duration) bool {
	return waitFor(limit, func() bool {
		for _, sub := range s.all {
			sub.mu.Lock()
			fresh := sub.last.After(since)
			sub.mu.Unlock()
			if !fresh {
				return false
			}
		}
		return true
	})
}

// longestGapBetween is the longest gap that ended in [from, to), and how many subscribers
// had one longer than longGap there.
func (s *subscribers) longestGapBetween(from, to time.Time) (time.Duration, int) {
	var longest time.Duration
	count := 0
	for _, sub := range s.all {
		sub.mu.Lock()
		counted := false
		for _, g := range sub.longGaps {
			if g.ended.Before(from) || !g.ended.Before(to) {
				continue
			}
			if g.length > longest {
				longest = g.length
			}
			if !counted {
				count++
				counted = true
			}
		}
		sub.mu.Unlock()
	}
	return longest, count
}

func (s *subscribers) maxGaps() []time.Duration {
	var gaps []time.Duration
	for _, sub := range s.all {
		sub.mu.Lock()
		gaps = append(gaps, sub.maxGap)
		sub.mu.Unlock()
	}
	return gaps
}

func (s *subscribers) totalSnapshots() int {
	total := 0
	for _, sub := range s.all {
		sub.mu.Lock()
		total += sub.snapshots
		sub.mu.Unlock()
	}
	return total
}

func (s *subscribers) totalReconnects() int {
	total := 0
	for _, sub := range s.all {
		sub.mu.Lock()
		total += sub.reconnects
		sub.mu.Unlock()
	}
	return total
}

func (s *subscribers) forgedDelivered() int { return int(s.forged.Load()) }

// eventReader gives the lines of an event stream's body, chunked or not (LF line ends; a
// CR before one is dropped).
type eventReader struct {
	reader  *bufio.Reader
	chunked bool
	left    int // bytes left in the current chunk
	pending []byte
}

func (e *eventReader) line() ([]byte, error) {
	for {
		if at := bytes.IndexByte(e.pending, '\n'); at >= 0 {
			line := e.pending[:at]
			e.pending = e.pending[at+1:]
			return bytes.TrimSuffix(line, []byte("\r")), nil
		}
		if err := e.fill(); err != nil {
			return nil, err
		}
	}
}

func (e *eventReader) fill() error {
	if !e.chunked {
		buffer := make([]byte, 16<<10)
		n, err := e.reader.Read(buffer)
		e.pending = append(e.pending, buffer[:n]...)
		return err
	}
	if e.left == 0 {
		sizeLine, err := e.reader.ReadString('\n')
		if err != nil {
			return err
		}
		var size int
		if _, err := fmt.Sscanf(sizeLine, "%x", &size); err != nil {
			return fmt.Errorf("bad chunk size %q", sizeLine)
		}
		if size == 0 {
			return fmt.Errorf("the stream ended")
		}
		e.left = size + 2 // the chunk and its CRLF
	}
	buffer := make([]byte, e.left)
	n, err := e.reader.Read(buffer)
	e.left -= n
	chunk := buffer[:n]
	if e.left < 2 { // the trailing CRLF, all or part of it, is not data
		cut := 2 - e.left
		if cut > len(chunk) {
			cut = len(chunk)
		}
		chunk = chunk[:len(chunk)-cut]
	}
	e.pending = append(e.pending, chunk...)
	return err
}
