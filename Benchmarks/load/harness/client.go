package harness

// Two small clients of the service: one keep-alive connection that sends requests one after
// another (the /metrics polls, reloads and counted requests), and an event-stream subscriber
// that keeps every event it reads (for the few streams whose every event a tool checks; the
// thousands of sse-scale are SSEClients').

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Conn is one keep-alive HTTP/1.1 connection to a service. Its requests carry the header
// lines Python's http.client sends (Host, Accept-Encoding: identity), then the caller's: the
// bytes the counts of Benchmarks/Thresholds were measured with.
type Conn struct {
	conn   net.Conn
	reader *bufio.Reader
	host   string
	Sent   int // the bytes of every request sent so far
}

// Dial opens a Conn to addr (127.0.0.1:PORT).
func Dial(addr string) (*Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &Conn{conn: conn, reader: bufio.NewReader(conn), host: addr}, nil
}

// Close closes the connection.
func (c *Conn) Close() { c.conn.Close() }

// Do sends `method path` with the header lines `headers` ("Name: value", e.g.
// "Content-Length: 0" for a POST without a body) and reads the whole answer, within 60 s.
func (c *Conn) Do(method, path string, headers ...string) (int, []byte, error) {
	var request strings.Builder
	fmt.Fprintf(&request, "%s %s HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: identity\r\n", method, path, c.host)
	for _, header := range headers {
		request.WriteString(header + "\r\n")
	}
	request.WriteString("\r\n")
	c.conn.SetDeadline(time.Now().Add(60 * time.Second))
	n, err := c.conn.Write([]byte(request.String()))
	c.Sent += n
	if err != nil {
		return 0, nil, err
	}
	response, err := http.ReadResponse(c.reader, nil)
	if err != nil {
		return 0, nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	return response.StatusCode, body, err
}

// GetEach asks GET path `count` times one after another, each answered 200.
func (c *Conn) GetEach(path string, count int, headers ...string) error {
	for i := 0; i < count; i++ {
		status, _, err := c.Do("GET", path, headers...)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("GET %s answered %d", path, status)
		}
	}
	return nil
}

// Event is one event of a stream: its name ("message" when it has none) and its data lines
// joined by "\n".
type Event struct{ Name, Data string }

// Stream is one event-stream subscriber of the service, reading in a goroutine of its own
// until Close.
type Stream struct {
	mu     sync.Mutex
	events []Event
	err    error
	body   io.Closer
}

// Subscribe opens GET url with Accept: text/event-stream and the header lines `headers`, and
// keeps every complete event it reads but those named `stream` (the stream's own id).
func Subscribe(url string, headers ...string) (*Stream, error) {
	request, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	request.Header.Set("Accept", "text/event-stream")
	for _, header := range headers {
		name, value, _ := strings.Cut(header, ": ")
		request.Header.Set(name, value)
	}
	response, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(request)
	if err != nil {
		return nil, err
	}
	if response.StatusCode != 200 {
		response.Body.Close()
		return nil, fmt.Errorf("GET %s answered %d", url, response.StatusCode)
	}
	s := &Stream{body: response.Body}
	go s.read(bufio.NewReader(response.Body))
	return s, nil
}

func (s *Stream) read(reader *bufio.Reader) {
	name, data, hasData := "message", []string(nil), false
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if hasData && name != "stream" {
				s.mu.Lock()
				s.events = append(s.events, Event{Name: name, Data: strings.Join(data, "\n")})
				s.mu.Unlock()
			}
			name, data, hasData = "message", nil, false
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data, hasData = append(data, strings.TrimLeft(line[5:], " ")), true
		}
	}
}

// Events is every event read so far.
func (s *Stream) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Count is how many events were read so far.
func (s *Stream) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// Close ends the subscription.
func (s *Stream) Close() { s.body.Close() }
