package main

// JSON load through nginx beside the streams: GET /groups at a fixed rate from a few
// goroutines (keep-alive connections), each answer counted by status ("error" when there
// was none); and every 5 s a genuine POST /groups/reload, which the forger overhears and
// plays back.

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

type jsonLoad struct {
	mu       sync.Mutex
	statuses map[string]int
	reloads  map[string]int
}

func startJSONLoad(port, rate int, stop <-chan struct{}, running *sync.WaitGroup) *jsonLoad {
	load := &jsonLoad{statuses: map[string]int{}, reloads: map[string]int{}}
	if rate <= 0 {
		return load
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	url := fmt.Sprintf("http://127.0.0.1:%d/groups", port)
	ticks := make(chan struct{}, 8)
	running.Add(1)
	go func() {
		defer running.Done()
		defer close(ticks)
		ticker := time.NewTicker(time.Second / time.Duration(rate))
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				select {
				case ticks <- struct{}{}:
				default: // all workers busy: this tick is skipped, the rate is a ceiling
				}
			}
		}
	}()
	running.Add(1)
	go func() {
		defer running.Done()
		ticker := time.NewTicker(5 * time.Second)
		defer ticker.Stop()
		reload := fmt.Sprintf("http://127.0.0.1:%d/groups/reload", port)
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				status := "error"
				if response, err := client.Post(reload, "", nil); err == nil {
					io.Copy(io.Discard, response.Body)
					response.Body.Close()
					status = fmt.Sprint(response.StatusCode)
				}
				load.mu.Lock()
				load.reloads[status]++
				load.mu.Unlock()
			}
		}
	}()
	for i := 0; i < 8; i++ {
		running.Add(1)
		go func() {
			defer running.Done()
			for range ticks {
				status := "error"
				if response, err := client.Get(url); err == nil {
					io.Copy(io.Discard, response.Body)
					response.Body.Close()
					status = fmt.Sprint(response.StatusCode)
				}
				load.mu.Lock()
				load.statuses[status]++
				load.mu.Unlock()
			}
		}()
	}
	return load
}

func (l *jsonLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("GET %s; POST /groups/reload %s", byStatus(l.statuses), byStatus(l.reloads))
}

// byStatus is "N answers (status: count, …)".
func byStatus(statuses map[string]int) string {
	var parts []string
	total := 0
	for status, count := range statuses {
		parts = append(parts, fmt.Sprintf("%s: %d", status, count))
		total += count
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d answers (%s)", total, strings.Join(parts, ", "))
}
