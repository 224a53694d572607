package main

// The attacks: raw bytes over loopback sockets, each a bounded number of connections for a
// bounded time. Every connection is made once (no reconnects) and closed at the attack's end.
// Slowloris is Debian's slowhttptest, run as a process; the others are this tool's own.

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// attackStats is what one attack did and saw in one round.
type attackStats struct {
	name      string
	planned   int
	connected atomic.Int64 // connections established
	dialFails atomic.Int64 // connects that failed or timed out
	opened    atomic.Int64 // flood and the part-3 attacks: streams answered 200
	bytes     atomic.Int64 // bytes the attack wrote
	requests  atomic.Int64 // the part-3 attacks: requests sent

	mu       sync.Mutex
	closedAt []time.Duration // when the service closed (or reset) a connection, since the attack began
	answers  map[string]int  // status lines the service answered with
	started  time.Time
	stopped  time.Time // the attack's last connection closed
}

func newStats(name string, planned int) *attackStats {
	return &attackStats{name: name, planned: planned, answers: map[string]int{}}
}

// serviceClosed records that the service closed a connection now.
func (s *attackStats) serviceClosed() {
	s.mu.Lock()
	s.closedAt = append(s.closedAt, time.Since(s.started))
	s.mu.Unlock()
}

func (s *attackStats) answered(statusLine string) {
	s.answeredN(statusLine, 1)
}

// answeredN counts n answers (or failures to answer) of one kind.
func (s *attackStats) answeredN(statusLine string, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.answers[statusLine] += n
	s.mu.Unlock()
}

// medianClose is the median time from the attack's start to the service closing one of its
// connections (0 if it closed none).
func (s *attackStats) medianClose() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.closedAt) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), s.closedAt...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

func (s *attackStats) closedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.closedAt)
}

func (s *attackStats) answerSummary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == 0 {
		return "none"
	}
	var parts []string
	for line, count := range s.answers {
		parts = append(parts, strings.TrimPrefix(line, "HTTP/1.1 ")+" ×"+strconv.Itoa(count))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// limiter spaces writes so that all its users together write at most `rate` bytes/s. It
// never lets unused time accumulate into a burst. A nil limiter lets everything through.
type limiter struct {
	mu        sync.Mutex
	next      time.Time
	nsPerByte float64
}

func newLimiter(mibPerSecond float64) *limiter {
	if mibPerSecond <= 0 {
		return nil
	}
	return &limiter{nsPerByte: 1e9 / (mibPerSecond * 1024 * 1024)}
}

// wait sleeps until n more bytes may be written; false if that is after the deadline.
func (l *limiter) wait(n int, deadline time.Time) bool {
	if l == nil {
		return time.Now().Before(deadline)
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(float64(n) * l.nsPerByte))
	l.mu.Unlock()
	if !at.Before(deadline) {
		return false
	}
	time.Sleep(time.Until(at))
	return true
}

// dialAll opens n connections to addr, `parallel` connects at a time, each given `timeout`,
// calls each(i, conn) for every one established (in the dialling goroutine), and returns
// once every connect has ended. It stops dialling at the deadline.
func dialAll(addr string, n, parallel int, timeout time.Duration, deadline time.Time, st *attackStats,
	each func(i int, conn net.Conn)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	if parallel > n {
		parallel = n
	}
	for g := 0; g < parallel; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || !time.Now().Before(deadline) {
					return
				}
				conn, err := net.DialTimeout("tcp", addr, timeout)
				if err != nil {
					st.dialFails.Add(1)
					continue
				}
				st.connected.Add(1)
				each(i, conn)
			}
		}()
	}
	wg.Wait()
}

// connSet holds an attack's connections so that it can close them all at its end.
type connSet struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *connSet) add(conn net.Conn) {
	c.mu.Lock()
	c.conns = append(c.conns, conn)
	c.mu.Unlock()
}

func (c *connSet) closeAll() {
	c.mu.Lock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
	c.mu.Unlock()
}

// watch reads what the service sends on conn until it closes the connection (recorded as a
// close by the service, with the status line of any answer) or the attack closes it.
func watch(conn net.Conn, st *attackStats, ours *atomic.Bool) {
	reader := bufio.NewReaderSize(conn, 512)
	line, err := reader.ReadString('\n')
	if line != "" && strings.HasPrefix(line, "HTTP/") {
		st.answered(strings.TrimSpace(line))
	}
	if err == nil {
		_, err = reader.Discard(1 << 30)
	}
	if err != nil && !ours.Load() && !errors.Is(err, net.ErrClosed) {
		st.serviceClosed()
	}
}

// writeError classifies an error of a write: the deadline (the attack's end) or the service
// having closed the connection.
func writeError(err error) (deadline bool) {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// attackSpec is one attack's configuration for a round.
type attackSpec struct {
	count     int // connections (the part-3 attacks: connections at once)
	duration  time.Duration
	rate      float64       // MiB/s for all its connections together (flood, chunks); 0: no cap
	interval  time.Duration // slowloris: between two bytes of one connection
	perSecond float64       // the part-3 attacks: requests/s for all their connections together; 0: no cap
	hold      time.Duration // tokens, params, forwarded: how long an event stream is held open
	streams   int           // tokens, params, forwarded: event streams open at once, at most
	clients   int           // xff: distinct X-Forwarded-For clients (requests) in all
	depth     int           // xff: requests pipelined per write on a connection
	mix       []string      // xff: the kinds of request, by turns (refused, shared, admitted)
	target    string        // xff: where its requests go, when not to the service (a control run)
}

// MARK: - Flooding event streams

// flood opens event streams of /groups, reads each stream's first bytes, then writes bytes
// into the connection as fast as the socket takes them (within the rate cap) until the end.
func flood(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
	st.started = start
	end := st.started.Add(spec.duration)
	limit := newLimiter(spec.rate)
	payload := []byte(strings.Repeat("flood-", 16384/6+1)[:16384])
	request := []byte("GET /groups HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n\r\n")
	var conns connSet
	var writers sync.WaitGroup
	dialAll(addr, spec.count, 32, 2*time.Second, end, st, func(i int, conn net.Conn) {
		conns.add(conn)
		writers.Add(1)
		go func() {
			defer writers.Done()
			conn.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := conn.Write(request); err != nil {
				st.serviceClosed()
				return
			}
			first := make([]byte, 512)
			n, err := conn.Read(first)
			if n > 0 {
				line := string(first[:n])
				if cut := strings.IndexByte(line, '\r'); cut > 0 {
					line = line[:cut]
				}
				st.answered(line)
				if strings.HasPrefix(line, "HTTP/1.1 200") {
					st.opened.Add(1)
				}
			}
			if err != nil {
				st.serviceClosed()
				return
			}
			conn.SetDeadline(end)
			for limit.wait(len(payload), end) {
				n, err := conn.Write(payload)
				st.bytes.Add(int64(n))
				if err != nil {
					if !writeError(err) {
						st.serviceClosed()
					}
					return
				}
			}
		}()
	})
	connected.Done()
	writers.Wait()
	time.Sleep(time.Until(end))
	conns.closeAll()
	st.stopped = time.Now()
}

// MARK: - Endless chunk-size lines

// chunks sends a chunked POST's head, then '0' bytes forever: a chunk-size line that never
// ends.
func chunks(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
	st.started = start
	end := st.started.Add(spec.duration)
	limit := newLimiter(spec.rate)
	payload := []byte(strings.Repeat("0", 4096))
	head := []byte("POST /streams/00000000000000000000000000000000/inputs/q HTTP/1.1\r\nHost: " + addr +
		"\r\nTransfer-Encoding: chunked\r\n\r\n")
	var conns connSet
	var writers sync.WaitGroup
	var ours atomic.Bool
	dialAll(addr, spec.count, 32, 2*time.Second, end, st, func(i int, conn net.Conn) {
		conns.add(conn)
		writers.Add(1)
		go watch(conn, st, &ours)
		go func() {
			defer writers.Done()
			conn.SetWriteDeadline(end)
			if _, err := conn.Write(head); err != nil {
				return
			}
			for limit.wait(len(payload), end) {
				n, err := conn.Write(payload)
				st.bytes.Add(int64(n))
				if err != nil {
					return // watch records a close by the service
				}
			}
		}()
	})
	connected.Done()
	writers.Wait()
	time.Sleep(time.Until(end))
	ours.Store(true)
	conns.closeAll()
	st.stopped = time.Now()
}

// MARK: - Slowloris

// slowloris runs Debian's slowhttptest in its slow-headers mode (-H): spec.count connections,
// all opened in the first second (-r), each sending `GET /groups` and then, every
// spec.interval (-i, whole seconds), one more short header line (`X-xx: xx`, -x 2), never the
// blank line that ends the head. It is stopped by its PID (SIGINT, SIGKILL 5 s later) at
// start + spec.duration; its -l is only a backstop. What it established, and when the service
// closed which of them, comes from its per-second CSV (-g); the bytes it sends are not
// counted.
func slowloris(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
	st.started = start
	end := st.started.Add(spec.duration)
	dir, err := os.MkdirTemp("", "tributary-slowhttptest.")
	if err != nil {
		st.answered("slowhttptest: " + err.Error())
		connected.Done()
		return
	}
	defer os.RemoveAll(dir)
	seconds := func(d time.Duration) string { return strconv.Itoa(int(math.Ceil(d.Seconds()))) }
	// Its probe timeout (-p) lies beyond the run: once it has passed, slowhttptest 1.8.2 spins
	// a core until it ends (measured at -p 5: from under 1% of a core to 100% at the 5th second).
	cmd := exec.Command("slowhttptest", "-H", "-c", strconv.Itoa(spec.count), "-r", strconv.Itoa(spec.count),
		"-i", seconds(spec.interval), "-x", "2", "-l", seconds(spec.duration+5*time.Second),
		"-p", seconds(spec.duration+10*time.Second),
		"-u", "http://"+addr+"/groups", "-g", "-o", filepath.Join(dir, "slowloris"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startExternal(cmd); err != nil {
		st.answered("cannot run slowhttptest (scripts/require-packages slowhttptest): " + err.Error())
		connected.Done()
		return
	}
	exited := make(chan struct{})
	go func() { waitExternal(cmd); close(exited) }()
	// It opens every connection within its first second.
	select {
	case <-time.After(1500 * time.Millisecond):
	case <-exited:
	}
	connected.Done()
	select {
	case <-time.After(time.Until(end)):
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	case <-exited:
	}
	st.stopped = time.Now()
	rows, err := readSlowhttptestCSV(filepath.Join(dir, "slowloris.csv"))
	if err != nil {
		st.answered("slowhttptest: " + err.Error())
		return
	}
	established, reached, closed := 0, 0, 0
	st.mu.Lock()
	for _, row := range rows {
		established = max(established, row.connected)
		reached = max(reached, row.connected+row.closed)
		for ; closed < row.closed; closed++ {
			st.closedAt = append(st.closedAt, row.at)
		}
	}
	st.mu.Unlock()
	st.connected.Store(int64(established))
	st.dialFails.Store(int64(max(0, spec.count-reached)))
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// slowhttptestRow is one second of slowhttptest's CSV: its connections closed so far (by the
// service, or failed) and connected now.
type slowhttptestRow struct {
	at                time.Duration
	closed, connected int
}

// readSlowhttptestCSV reads `Seconds,Closed,Pending,Connected,Service Available`.
func readSlowhttptestCSV(path string) ([]slowhttptestRow, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	records, err := csv.NewReader(file).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(records) < 2 || len(records[0]) < 4 || records[0][1] != "Closed" || records[0][3] != "Connected" {
		return nil, fmt.Errorf("%s: not the CSV this tool reads", path)
	}
	var rows []slowhttptestRow
	for _, record := range records[1:] {
		second, _ := strconv.Atoi(record[0])
		closed, _ := strconv.Atoi(record[1])
		connected, _ := strconv.Atoi(record[3])
		rows = append(rows, slowhttptestRow{at: time.Duration(second) * time.Second, closed: closed, connected: connected})
	}
	return rows, nil
}

// MARK: - Descriptor exhaustion

// descriptors opens connections in a burst (beyond the service's open-file limit: the rest
// wait in its accept queue or time out) and holds them, silent, until the end. The burst
// begins once the other attacks have connected (so that they are not the ones starved) and
// ends with them, at start + duration.
func descriptors(addr string, spec attackSpec, start time.Time, st *attackStats) {
	st.started = start
	end := st.started.Add(spec.duration)
	var conns connSet
	var ours atomic.Bool
	dialAll(addr, spec.count, 64, time.Second, end, st, func(i int, conn net.Conn) {
		conns.add(conn)
		go watch(conn, st, &ours)
	})
	time.Sleep(time.Until(end))
	ours.Store(true)
	conns.closeAll()
	st.stopped = time.Now()
}
