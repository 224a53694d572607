package harness

// The pieces of the tools' upstreams: the `tasks` API's groups and their metadata, and the
// raw HTTP/1.1 a raw-TCP upstream reads and writes.

import (
	"bufio"
	"fmt"
	"net"
	"strings"
)

// GroupList is the upstream's answer to GET /groups: `groups` groups, group-0000 first.
func GroupList(groups int) string {
	var body strings.Builder
	body.WriteString(`{"result":[`)
	for i := 0; i < groups; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"id":"group-%04d","name":"Group number %d"}`, i, i)
	}
	body.WriteString(`]}`)
	return body.String()
}

// GroupMetadata is the upstream's answer to GET /groups/{id}/metadata.
func GroupMetadata(taskCount int64) string {
	return fmt.Sprintf(`{"result":{"taskCount":%d,"lastUpdated":"2026-11-21T12:00:00Z"}}`, taskCount)
}

// ServeRequests is a raw-TCP HTTP/1.1 server on a free loopback port, for upstreams that
// misbehave at the socket level. It reads the requests of each keep-alive connection one at
// a time (GET only: no bodies) and calls handle with the path of each, without the query;
// handle writes the answer to conn itself, may read on through reader (to see the peer close,
// say), and returns false to close the connection. Each connection has its own goroutine;
// the server runs until the listener is closed.
func ServeRequests(handle func(conn net.Conn, reader *bufio.Reader, path string) bool) (net.Listener, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go serveConnection(conn, handle)
		}
	}()
	return listener, nil
}

func serveConnection(conn net.Conn, handle func(net.Conn, *bufio.Reader, string) bool) {
	defer conn.Close()
	reader := bufio.NewReader(conn)
	for {
		path, err := readRequestHead(reader)
		if err != nil || !handle(conn, reader, path) {
			return
		}
	}
}

// readRequestHead reads one request's line and headers (a request without a body) and
// returns its path without the query.
func readRequestHead(reader *bufio.Reader) (string, error) {
	line, err := reader.ReadString('\n')
	if err != nil {
		return "", err
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return "", fmt.Errorf("bad request line %q", line)
	}
	for {
		header, err := reader.ReadString('\n')
		if err != nil {
			return "", err
		}
		if header == "\r\n" || header == "\n" {
			break
		}
	}
	path := fields[1]
	if query := strings.IndexByte(path, '?'); query >= 0 {
		path = path[:query]
	}
	return path, nil
}

// Response is a complete 200 response with a JSON body.
func Response(body string) []byte {
	return []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}

// NotFound is a complete, empty 404 response.
var NotFound = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

// GetRequest is a GET request for path to host (ADDR:PORT) with an Accept header unless
// accept is empty, as a client writes it on a raw socket.
func GetRequest(path, host, accept string) []byte {
	return GetRequestWith(path, host, accept, "")
}

// GetRequestWith is GetRequest with more header lines, each ending in CRLF ("" for none).
func GetRequestWith(path, host, accept, headers string) []byte {
	request := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if accept != "" {
		request += "Accept: " + accept + "\r\n"
	}
	return []byte(request + headers + "\r\n")
}

// PortOfURL is the port of http://HOST:PORT.
func PortOfURL(url string) int {
	var port int
	fmt.Sscanf(url[strings.LastIndexByte(url, ':')+1:], "%d", &port)
	return port
}
