package main

// A few live streams read event by event (the calls, trigger and failover phases; the
// scale phase's 10,000 use harness.SSEClients): one goroutine per stream parses the
// text/event-stream and time-stamps each event as its last line is read.

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type event struct {
	kind, id, data string
	at             time.Time
}

type stream struct {
	port     int
	response *http.Response
	events   chan event
	id       string // the stream's id, from its `event: stream`
}

var streamClient = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}

var errEnded = errors.New("the stream ended")
var errTimeout = errors.New("no event in time")

// openStream subscribes to path on 127.0.0.1:port and waits (≤ 10 s) for its `event: stream`.
func openStream(port int, path string) (*stream, error) {
	request, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return nil, err
	}
	request.Header.Set("Accept", "text/event-stream")
	response, err := streamClient.Do(request)
	if err != nil {
		return nil, err
	}
	if response.StatusCode != 200 {
		response.Body.Close()
		return nil, fmt.Errorf("GET %s on port %d: status %d", path, port, response.StatusCode)
	}
	s := &stream{port: port, response: response, events: make(chan event, 4096)}
	go s.read()
	announced, err := s.next(time.Now().Add(10 * time.Second))
	if err != nil || announced.kind != "stream" {
		s.close()
		return nil, fmt.Errorf("GET %s on port %d: no stream announced (%v)", path, port, err)
	}
	s.id = regexp.MustCompile(`"id":"([0-9a-f]{32})"`).FindStringSubmatch(announced.data)[1]
	return s, nil
}

func (s *stream) read() {
	defer close(s.events)
	lines := bufio.NewReaderSize(s.response.Body, 1<<16)
	var current event
	var data []string
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) > 0 {
				current.data = strings.Join(data, "\n")
				current.at = time.Now()
				s.events <- current
			}
			current, data = event{}, nil
		case strings.HasPrefix(line, "event: "):
			current.kind = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			current.id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		}
	}
}

// next is the next event, or an error at the deadline or when the stream ended.
func (s *stream) next(deadline time.Time) (event, error) {
	select {
	case e, ok := <-s.events:
		if !ok {
			return event{}, errEnded
		}
		return e, nil
	case <-time.After(time.Until(deadline)):
		return event{}, errTimeout
	}
}

// nextSnapshot skips other events up to the next snapshot.
func (s *stream) nextSnapshot(deadline time.Time) (event, error) {
	for {
		e, err := s.next(deadline)
		if err != nil || e.kind == "snapshot" {
			return e, err
		}
	}
}

// drain drops the events already received.
func (s *stream) drain() {
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func (s *stream) close() { s.response.Body.Close() }

var listCallPattern = regexp.MustCompile(`"name":"list call (\d+)"`)

// listCall is the upstream list call a /groups snapshot shows (-1 if none).
func listCall(e event) int64 {
	match := listCallPattern.FindStringSubmatch(e.data)
	if match == nil {
		return -1
	}
	n, _ := strconv.ParseInt(match[1], 10, 64)
	return n
}
