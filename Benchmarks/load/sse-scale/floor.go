package main

// The floor peer (-peers …,floor): the least work any server could do to hand one event to
// every subscriber, served from this process on threads of its own. It answers each
// subscriber's GET as Tributary does (the same response head, the same preamble and first
// snapshot, one chunk per event), keeps the socket's descriptor, and on an update builds the
// event's frame once and has W writer threads (W = -workers), each locked to its OS thread
// and given 1/W of the descriptors, make one write(2) of that frame per subscriber: no
// allocation, no lock, no channel per subscriber. The gap between the floor's fan-out and a
// peer's is what that peer's own work costs; the floor itself is the kernel's loopback TCP
// (the send, the receiver's processing, its wakeup) and this machine's cores.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"tributary/benchmarks/load/harness"
)

// Bounds of the floor's waits, so that a run always ends.
const (
	floorHandshakeTimeout = 30 * time.Second // a subscriber's request head and first events
	floorRetryTimeout     = 30 * time.Second // a writer finishing its short or refused writes
	floorUpdateTimeout    = 60 * time.Second // every writer done with an update
	floorStopTimeout      = 5 * time.Second  // the accept loop, the handshakes and the writers ending
)

// writeCounts are the floor writers' writes that did not go whole at once, summed.
type writeCounts struct {
	short      int // write took part of the frame
	again      int // write took nothing (EAGAIN: the socket's send buffer was full)
	retried    int // writes made again by the retry loop
	failed     int // write failed (the subscriber is gone)
	unfinished int // frames still not written whole when the retry loop gave up
}

func (w writeCounts) minus(before writeCounts) writeCounts {
	return writeCounts{w.short - before.short, w.again - before.again, w.retried - before.retried,
		w.failed - before.failed, w.unfinished - before.unfinished}
}

func (w *writeCounts) add(other writeCounts) {
	w.short += other.short
	w.again += other.again
	w.retried += other.retried
	w.failed += other.failed
	w.unfinished += other.unfinished
}

// inProcessPeer is a peer served by threads of this process (the floor): its CPU time is
// measured per thread (CLOCK_THREAD_CPUTIME_ID, in ns), and is also in this process's, which
// the load client's figure must then leave out.
type inProcessPeer interface {
	threadCPU() time.Duration // the server threads' CPU time so far, once the update in flight is written
	writeCounts() writeCounts // so far
}

// floorJob is one update: its frame, and the moment the writers start.
type floorJob struct {
	frame []byte
	start chan struct{} // closed to release the writers
}

// floorWriter is one writer thread and its share of the subscribers.
type floorWriter struct {
	jobs    chan *floorJob // one at a time, handed over before t0
	armed   chan struct{}  // the writer has its job and has read its figures: it waits for the release
	done    chan writeCounts
	exited  chan struct{}
	fds     []int          // this update's share, copied before t0
	pending []pendingWrite // room for all of them, so the hot loop never allocates
	cpuNS   atomic.Int64   // its thread's CPU time (CLOCK_THREAD_CPUTIME_ID) at its last sample
	nivcsw  atomic.Int64   // its thread's involuntary context switches (getrusage RUSAGE_THREAD) then
}

type pendingWrite struct {
	fd, written int
}

type floorPeer struct {
	listener   net.Listener
	portNumber int
	up         *harness.Upstream
	patch      bool
	writers    []*floorWriter
	quit       chan struct{} // closed by stop: the writers end
	accepting  chan struct{} // closed when the accept loop has ended
	handshakes sync.WaitGroup
	first      atomic.Pointer[[]byte] // the current snapshot's frame: a new subscriber's first event
	idNonce    *rand.Rand             // the preamble's stream ids (accept path only, under mu)

	mu        sync.Mutex
	fds       []int // subscribers' sockets (duplicates of the accepted ones), accept order
	accepted  int
	failed    int // handshakes that failed
	closed    bool
	acceptErr error
	counts    writeCounts   // summed over the updates
	inFlight  chan struct{} // closed when the last update's writes are all done
	stopOnce  sync.Once
	maxProcs  int // GOMAXPROCS before the floor raised it
	peekBytes []byte
}

// startFloor listens on a free 127.0.0.1 port and starts `workers` writer threads; the
// upstream's current document is the first event of every subscriber that connects.
// GOMAXPROCS is raised for the floor's lifetime so that every writer, the load client's loop
// and one more goroutine each have a P: the kernel schedules the threads on the cores, as it
// does a server's processes, instead of Go's scheduler sharing 2 Ps among them.
func startFloor(up *harness.Upstream, workers int, patch bool) (*floorPeer, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	document, err := documentOf(up)
	if err != nil {
		listener.Close()
		return nil, err
	}
	f := &floorPeer{listener: listener, portNumber: listener.Addr().(*net.TCPAddr).Port, up: up, patch: patch,
		quit: make(chan struct{}), accepting: make(chan struct{}), idNonce: rand.New(rand.NewSource(time.Now().UnixNano())),
		peekBytes: make([]byte, 1)}
	first := floorFrame("snapshot", up.Version.Load(), document)
	f.first.Store(&first)
	f.maxProcs = runtime.GOMAXPROCS(0)
	if f.maxProcs < workers+2 {
		runtime.GOMAXPROCS(workers + 2)
	}
	ready := make(chan struct{}, workers)
	for i := 0; i < workers; i++ {
		w := &floorWriter{jobs: make(chan *floorJob, 1), armed: make(chan struct{}, 1), done: make(chan writeCounts, 1), exited: make(chan struct{})}
		f.writers = append(f.writers, w)
		go w.run(f.quit, ready)
	}
	for range f.writers {
		<-ready
	}
	go f.acceptLoop()
	return f, nil
}

// floorFrame is one event as Tributary frames it: one chunk (size line, event, CRLF). The
// id has Tributary's 16 hex digits, so the events have the same size.
func floorFrame(kind string, version int64, data string) []byte {
	event := fmt.Sprintf("event: %s\nid: %016x\ndata: %s\n\n", kind, version, data)
	return []byte(fmt.Sprintf("%x\r\n%s\r\n", len(event), event))
}

// floorHead is Tributary's answer to GET /groups with Accept: text/event-stream, up to and
// with its first chunk (retry and the stream event, with a fresh 32-hex-digit id).
func (f *floorPeer) floorHead() []byte {
	f.mu.Lock()
	id := fmt.Sprintf("%016x%016x", f.idNonce.Uint64(), f.idNonce.Uint64())
	f.mu.Unlock()
	preamble := fmt.Sprintf("retry: 2000\nevent: stream\ndata: {\"id\":\"%s\",\"triggers\":[\"reload\"],\"inputs\":[]}\n\n", id)
	return []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nVary: Accept\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"+
		"X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\nDate: %s\r\n\r\n%x\r\n%s\r\n",
		time.Now().UTC().Format(http.TimeFormat), len(preamble), preamble))
}

// acceptLoop accepts subscribers until the listener is closed. A connection that comes after
// a pause of half a second or more (the measured subscribers after the warm-up's) first
// prunes the sockets whose subscribers have gone, so the warm-up's do not hold descriptors:
// this process has both ends of every connection within one open-file limit. Running out of
// descriptors (or a connection aborted before its accept) is waited out, not fatal.
func (f *floorPeer) acceptLoop() {
	defer close(f.accepting)
	var last time.Time
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			f.mu.Lock()
			closed := f.closed
			if !closed && !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) && !errors.Is(err, syscall.ECONNABORTED) {
				f.acceptErr = err
			}
			stop := closed || f.acceptErr != nil
			f.mu.Unlock()
			if stop {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		now := time.Now()
		if !last.IsZero() && now.Sub(last) >= 500*time.Millisecond {
			f.prune()
		}
		last = now
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			conn.Close()
			return
		}
		f.accepted++
		f.handshakes.Add(1)
		f.mu.Unlock()
		go f.handshake(conn.(*net.TCPConn))
	}
}

// handshake reads and ignores the request head, answers with the stream's head, preamble and
// the current snapshot, then keeps a duplicate of the socket's descriptor (taken through
// SyscallConn, non-blocking) and closes the net.Conn: the descriptor is then out of Go's
// poller, and only the writers touch it.
func (f *floorPeer) handshake(conn *net.TCPConn) {
	defer f.handshakes.Done()
	fail := func() {
		conn.Close()
		f.mu.Lock()
		f.failed++
		f.mu.Unlock()
	}
	conn.SetDeadline(time.Now().Add(floorHandshakeTimeout))
	var head []byte
	buffer := make([]byte, 2048)
	for !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := conn.Read(buffer)
		if err != nil || len(head) > 64<<10 {
			fail()
			return
		}
		head = append(head, buffer[:n]...)
	}
	answer := append(f.floorHead(), *f.first.Load()...)
	if _, err := conn.Write(answer); err != nil {
		fail()
		return
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		fail()
		return
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = errno
			return
		}
		fd = int(r)
	}); err != nil || dupErr != nil {
		fail()
		return
	}
	conn.Close() // the duplicate keeps the connection open
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		fail()
		return
	}
	f.mu.Lock()
	if f.closed {
		syscall.Close(fd)
	} else {
		f.fds = append(f.fds, fd)
	}
	f.mu.Unlock()
}

// run is one writer: locked to its thread for good (the thread ends with it), it takes an
// update's job and reads its thread's CPU time and preemptions (before t0), waits for the
// release, writes the frame to its share of the subscribers, and reads them again: the
// difference is the update's.
func (w *floorWriter) run(quit <-chan struct{}, ready chan<- struct{}) {
	runtime.LockOSThread()
	defer close(w.exited)
	w.sample()
	ready <- struct{}{}
	for {
		var job *floorJob
		select {
		case job = <-w.jobs:
		case <-quit:
			return
		}
		w.sample()
		w.armed <- struct{}{}
		select {
		case <-job.start:
		case <-quit:
			return
		}
		counts := w.write(job.frame)
		w.sample()
		w.done <- counts
	}
}

// write makes one write of frame per descriptor; what a socket did not take whole is
// finished by the retry loop afterwards (≈ never for small events).
func (w *floorWriter) write(frame []byte) writeCounts {
	var counts writeCounts
	pending := w.pending[:0]
	for _, fd := range w.fds {
		n, err := syscall.Write(fd, frame)
		if n == len(frame) {
			continue
		}
		switch {
		case err == syscall.EAGAIN:
			counts.again++
		case err != nil && err != syscall.EINTR:
			counts.failed++
			continue
		case n > 0:
			counts.short++
		}
		if n < 0 {
			n = 0
		}
		pending = append(pending, pendingWrite{fd, n})
	}
	deadline := time.Now().Add(floorRetryTimeout)
	for len(pending) > 0 && time.Now().Before(deadline) {
		left := pending[:0]
		for _, p := range pending {
			n, err := syscall.Write(p.fd, frame[p.written:])
			counts.retried++
			if n > 0 {
				p.written += n
			}
			if p.written == len(frame) {
				continue
			}
			if err != nil && err != syscall.EAGAIN && err != syscall.EINTR {
				counts.failed++
				continue
			}
			left = append(left, p)
		}
		pending = left
		if len(pending) > 0 {
			time.Sleep(200 * time.Microsecond)
		}
	}
	counts.unfinished = len(pending)
	w.pending = pending[:0]
	return counts
}

const (
	rusageThread         = 1 // RUSAGE_THREAD
	clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID: the scheduler's run time of the thread, in ns
)

// sample reads the calling (writer's) thread's CPU time, to the nanosecond, and its
// involuntary context switches.
func (w *floorWriter) sample() {
	var now syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&now)), 0); errno == 0 {
		w.cpuNS.Store(now.Nano())
	}
	var usage syscall.Rusage
	if syscall.Getrusage(rusageThread, &usage) == nil {
		w.nivcsw.Store(usage.Nivcsw)
	}
}

func (f *floorPeer) port() int                   { return f.portNumber }
func (f *floorPeer) paths(shape layout) []string { return shape.paths() } // the same request as Tributary's subscribers; ignored
func (f *floorPeer) rssKiB() int                 { return -1 }            // n/a: the load client lives in this process
func (f *floorPeer) profilePID() int             { return os.Getpid() }   // this process: the load client too

func (f *floorPeer) cpuTicks() int { return int(f.threadCPU() / (10 * time.Millisecond)) }

// preempted is the writer threads' involuntary context switches (getrusage RUSAGE_THREAD).
func (f *floorPeer) preempted() int {
	f.settle()
	total := 0
	for _, w := range f.writers {
		total += int(w.nivcsw.Load())
	}
	return total
}

func (f *floorPeer) threadCPU() time.Duration {
	f.settle()
	var total int64
	for _, w := range f.writers {
		total += w.cpuNS.Load()
	}
	return time.Duration(total)
}

func (f *floorPeer) writeCounts() writeCounts {
	f.settle()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts
}

// settle waits (≤ floorUpdateTimeout) until the update released last, if any, is written
// and every writer has read its thread's figures.
func (f *floorPeer) settle() {
	f.mu.Lock()
	inFlight := f.inFlight
	f.mu.Unlock()
	if inFlight == nil {
		return
	}
	timeout := time.NewTimer(floorUpdateTimeout)
	defer timeout.Stop()
	select {
	case <-inFlight:
	case <-timeout.C:
	}
}

// prune closes and forgets the sockets whose subscriber has gone (the warm-up's, those a
// write found broken): a non-blocking peek reads end of file or an error. Done before t0,
// and when subscribers connect after a pause (acceptLoop).
func (f *floorPeer) prune() {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := f.fds[:0]
	for _, fd := range f.fds {
		n, _, err := syscall.Recvfrom(fd, f.peekBytes, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EAGAIN || err == syscall.EINTR || (err == nil && n > 0) {
			live = append(live, fd)
			continue
		}
		syscall.Close(fd)
	}
	f.fds = live
}

// update builds, before t0, the frame of what a Tributary subscriber gets for `version` (as
// the Nchan peer does: the document, or in patch mode the patch when smaller), hands each
// writer a copy of its share of the live sockets, and returns the release: measure takes t0
// just before it. The request "answers" when every writer is done.
func (f *floorPeer) update(version int64) func() error {
	f.settle()
	kind, body, document, err := eventOf(f.up, f.patch)
	if err != nil {
		return func() error { return err }
	}
	frame := floorFrame(kind, version, body)
	first := floorFrame("snapshot", version, document)
	f.first.Store(&first)
	f.prune()
	f.mu.Lock()
	count := len(f.fds)
	for i, w := range f.writers {
		share := f.fds[i*count/len(f.writers) : (i+1)*count/len(f.writers)]
		w.fds = append(w.fds[:0], share...)
		if cap(w.pending) < len(share) {
			w.pending = make([]pendingWrite, 0, len(share))
		}
	}
	f.mu.Unlock()
	job := &floorJob{frame: frame, start: make(chan struct{})}
	for _, w := range f.writers {
		w.jobs <- job
	}
	for _, w := range f.writers {
		select {
		case <-w.armed:
		case <-time.After(floorUpdateTimeout):
			return func() error { return fmt.Errorf("a floor writer did not take its update in %v", floorUpdateTimeout) }
		}
	}
	return func() error {
		// From the release on, the CPU and write figures wait for this update's end.
		inFlight := make(chan struct{})
		f.mu.Lock()
		f.inFlight = inFlight
		f.mu.Unlock()
		defer close(inFlight)
		close(job.start)
		timeout := time.NewTimer(floorUpdateTimeout)
		defer timeout.Stop()
		var sum writeCounts
		for _, w := range f.writers {
			select {
			case counts := <-w.done:
				sum.add(counts)
			case <-timeout.C:
				return fmt.Errorf("the floor's writers did not finish the update in %v", floorUpdateTimeout)
			}
		}
		f.mu.Lock()
		f.counts.add(sum)
		f.mu.Unlock()
		return nil
	}
}

func (f *floorPeer) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acceptErr != nil {
		return fmt.Errorf("the floor's listener failed: %v", f.acceptErr)
	}
	return nil
}

func (f *floorPeer) logTail() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("floor: %d connections accepted, %d failed handshakes, %d sockets kept; writes: %+v", f.accepted, f.failed, len(f.fds), f.counts)
}

// stop closes the listener and every socket, ends the writer threads and restores GOMAXPROCS;
// each wait is bounded (floorStopTimeout). Safe to call more than once, from any goroutine.
func (f *floorPeer) stop() {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.listener.Close()
		close(f.quit)
		handshakes := make(chan struct{})
		go func() { f.handshakes.Wait(); close(handshakes) }()
		waits := []<-chan struct{}{f.accepting, handshakes}
		for _, w := range f.writers {
			waits = append(waits, w.exited)
		}
		timeout := time.NewTimer(floorStopTimeout)
		defer timeout.Stop()
	wait:
		for _, ended := range waits {
			select {
			case <-ended:
			case <-timeout.C:
				fmt.Fprintln(os.Stderr, "sse-scale: the floor did not stop within", floorStopTimeout, "(closing its sockets anyway)")
				break wait
			}
		}
		f.mu.Lock()
		for _, fd := range f.fds {
			syscall.Close(fd)
		}
		f.fds = nil
		f.mu.Unlock()
		if runtime.GOMAXPROCS(0) != f.maxProcs {
			runtime.GOMAXPROCS(f.maxProcs)
		}
	})
}
