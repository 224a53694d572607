package main

// Checks, not load: a HEAD then a GET on one keep-alive connection must not desynchronize
// (no body after the HEAD's headers), and an upstream URL on port 0 must give an error
// answer, not a crash.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

type checkResult struct {
	name    string
	passed  bool
	crashed bool
	detail  string
}

// checkBody: GET /groups answers 200 with exactly the fixture's expected.json (if given).
func checkBody(s *harness.Service, expectedPath string) error {
	response, err := http.Get("http://" + s.Addr + "/groups")
	if err != nil {
		return fmt.Errorf("GET /groups: %v", err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if response.StatusCode != 200 {
		return fmt.Errorf("GET /groups answered %d: %s", response.StatusCode, body)
	}
	if expectedPath == "" {
		return nil
	}
	expected, err := os.ReadFile(expectedPath)
	if err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace(expected)) {
		return fmt.Errorf("GET /groups differs from %s: %.200s", expectedPath, body)
	}
	return nil
}

func runChecks(work *harness.Workspace, o options) []checkResult {
	fmt.Println("\nchecks (fresh services, shipped configuration)")
	return []checkResult{headThenGet(work, o), portZero(work, o)}
}

// readHead reads one response's status line and headers.
func readHead(reader *bufio.Reader) (status string, headers map[string]string, err error) {
	headers = map[string]string{}
	status, err = reader.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	status = strings.TrimSpace(status)
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			return status, headers, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return status, headers, nil
		}
		if colon := strings.IndexByte(line, ':'); colon > 0 {
			headers[strings.ToLower(line[:colon])] = strings.TrimSpace(line[colon+1:])
		}
	}
}

// headThenGet: on one connection, HEAD /groups, then (after the head and 300 ms in which no
// byte may follow) GET /healthz, whose answer must be the next thing on the connection; the
// same with HEAD /healthz.
func headThenGet(work *harness.Workspace, o options) checkResult {
	c := checkResult{name: "HEAD then GET on one keep-alive connection"}
	s, err := work.StartServiceWith(harness.ServiceOptions{Bin: o.bin, ConfigPath: o.config,
		Args: []string{"--upstream", "tasks=" + o.upstream}}, "service-head.log")
	if err != nil {
		c.detail = err.Error()
		return c
	}
	defer s.Stop()
	var notes []string
	c.passed = true
	for _, path := range []string{"/groups", "/healthz"} {
		note, ok := headGet(s.Addr, path)
		notes = append(notes, note)
		c.passed = c.passed && ok
	}
	if !s.Alive() {
		c.passed, c.crashed = false, true
		notes = append(notes, fmt.Sprintf("service exited %d: %s", s.ExitCode(), lastLines(s.LogTail(), 4)))
	}
	c.detail = strings.Join(notes, "; ")
	fmt.Printf("%s: %s\n", c.name, c.detail)
	return c
}

func headGet(addr, path string) (string, bool) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "HEAD " + path + ": " + err.Error(), false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	reader := bufio.NewReader(conn)
	fmt.Fprintf(conn, "HEAD %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
	status, headers, err := readHead(reader)
	if err != nil {
		return fmt.Sprintf("HEAD %s: %v", path, err), false
	}
	length := headers["content-length"]
	// Nothing may follow the HEAD answer's headers.
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	extra, _ := reader.Peek(1)
	buffered := reader.Buffered()
	if len(extra) > 0 || buffered > 0 {
		rest := make([]byte, reader.Buffered())
		reader.Read(rest)
		return fmt.Sprintf("HEAD %s (%s, Content-Length %q) was followed by %d body bytes (%.40q): desync", path, status, length, len(rest), rest), false
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	next, headers, err := readHead(reader)
	if err != nil {
		return fmt.Sprintf("HEAD %s (%s), then GET /healthz: %v", path, status, err), false
	}
	if !strings.HasPrefix(next, "HTTP/1.1 ") {
		return fmt.Sprintf("HEAD %s (%s), then GET /healthz read %q: desync", path, status, next), false
	}
	if n, err := strconv.Atoi(headers["content-length"]); err == nil {
		io.CopyN(io.Discard, reader, int64(n))
	}
	return fmt.Sprintf("HEAD %s: %s (Content-Length %s, no body), then GET: %s", path, status, length, next), strings.HasPrefix(next, "HTTP/1.1 200")
}

// portZero: with the tasks upstream at http://127.0.0.1:0, GET /groups (a few times) must
// answer an error (502/503/504) and the service must live on.
func portZero(work *harness.Workspace, o options) checkResult {
	c := checkResult{name: "upstream on port 0"}
	s, err := work.StartServiceWith(harness.ServiceOptions{Bin: o.bin, ConfigPath: o.config,
		Args: []string{"--upstream", "tasks=http://127.0.0.1:0"}}, "service-port0.log")
	logPath := filepath.Join(work.Dir, "service-port0.log")
	if err != nil {
		c.detail = err.Error()
		return c
	}
	defer s.Stop()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var answers []string
	for i := 0; i < 3 && s.Alive(); i++ {
		response, err := client.Get("http://" + s.Addr + "/groups")
		if err != nil {
			answers = append(answers, "no answer ("+err.Error()+")")
			time.Sleep(200 * time.Millisecond)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(response.Body, 300))
		response.Body.Close()
		answers = append(answers, fmt.Sprintf("%d %s", response.StatusCode, strings.TrimSpace(string(body))))
	}
	// A crashing service may still be writing its backtrace: without an answer to /healthz,
	// give it 10 s to exit.
	health := s.Healthz()
	if health != 200 {
		select {
		case <-s.Done():
		case <-time.After(10 * time.Second):
		}
	}
	if !s.Alive() {
		c.crashed = true
		c.detail = fmt.Sprintf("the service CRASHED: exit %d (%v); answers: %s; log: %s", s.ExitCode(), s.ExitErr(),
			strings.Join(answers, " | "), crashSummary(logPath))
	} else {
		c.passed = health == 200 && len(answers) > 0 && strings.HasPrefix(answers[0], "50")
		c.detail = fmt.Sprintf("GET /groups ×%d: %s; then /healthz %d", len(answers), strings.Join(answers, " | "), health)
	}
	fmt.Printf("%s: %s\n", c.name, c.detail)
	return c
}
