package main

// The forger: someone who can read and write the fleet's Redis but lacks its secret. Every
// second it reads what anyone can (the fleet's key prefix off the lease key, the replicas'
// ids in the interest set, their channels) and writes what the audit of issue 26 wrote, on a
// RESP connection of its own (a new one after Redis was frozen or restarted): forged states,
// the latest and the lease overwritten, forged reloads and control messages, and genuine
// states and reloads it overheard, played back.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// forgeryMark is in every document the forger writes: a subscriber that sees it was served
// a forgery.
const forgeryMark = "tributary-chaos-forgery"

type forger struct {
	port int
	// Whether it writes the lease (which also clears a dead holder's lease early: off, a
	// failover takes its full leaseTTL).
	leases bool
	// Whether it publishes a 9 MiB state every 10 s.
	huge bool
	// What it wrote, by kind.
	mu      sync.Mutex
	written map[string]int
	// Genuine messages overheard on the states and reload channels, to play back.
	overheard map[string][]byte
	// Genuine lease values read, by round: one 10 rounds old is set back (stale by then).
	leaseValues map[int]string
	round       int
}

func newForger(port int, leases, huge bool) *forger {
	return &forger{port: port, leases: leases, huge: huge, written: map[string]int{}, overheard: map[string][]byte{}, leaseValues: map[int]string{}}
}

func (f *forger) run(stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var spy *resp
	var spyEnded <-chan struct{}
	for {
		select {
		case <-stop:
			if spy != nil {
				spy.close()
			}
			return
		case <-ticker.C:
		}
		conn, err := dialRESP(f.port)
		if err != nil {
			continue // Redis frozen or restarting
		}
		prefix := f.prefix(conn)
		listening := spy != nil
		if listening {
			select {
			case <-spyEnded: // Redis restarted under it
				listening = false
			default:
			}
		}
		if prefix != "" && !listening {
			if spy != nil {
				spy.close()
			}
			spy, spyEnded = f.listen(prefix)
		}
		if prefix != "" {
			f.forge(conn, prefix)
		}
		conn.close()
		f.round++
	}
}

// prefix is `tributary:<fleet>`, read off the lease key ("" while there is none).
func (f *forger) prefix(conn *resp) string {
	keys, err := conn.strings("KEYS", "*:lease:groups")
	if err != nil || len(keys) == 0 {
		return ""
	}
	return strings.TrimSuffix(keys[0], ":lease:groups")
}

// listen subscribes a connection of its own to the states and reload channels and keeps
// the last genuine message of each, until the connection ends (ended is closed then).
func (f *forger) listen(prefix string) (spy *resp, ended <-chan struct{}) {
	spy, err := dialRESP(f.port)
	if err != nil {
		return nil, nil
	}
	spy.conn.SetDeadline(time.Time{})
	if err := spy.send("SUBSCRIBE", prefix+":states:groups", prefix+":reload"); err != nil {
		spy.close()
		return nil, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			reply, err := spy.read()
			if err != nil {
				return
			}
			if parts, ok := reply.([]any); ok && len(parts) == 3 && parts[0] == "message" {
				channel, _ := parts[1].(string)
				payload, _ := parts[2].(string)
				if !sealedByAReplica(payload) {
					continue // one of the forger's own
				}
				f.mu.Lock()
				f.overheard[channel] = []byte(payload)
				if strings.HasSuffix(channel, ":reload") {
					f.written["overheard reload"]++
				} else {
					f.written["overheard state"]++
				}
				f.mu.Unlock()
			}
		}
	}()
	return spy, done
}

func (f *forger) forge(conn *resp, prefix string) {
	states, latest, lease := prefix+":states:groups", prefix+":latest:groups", prefix+":lease:groups"
	now := time.Now().UnixMilli()
	seal := strings.Repeat("0", 64) // where the MAC goes: a guess
	poison := "null\nNOT JSON </script> {\""
	marked := fmt.Sprintf(`null`+"\n"+`{"groups":[{"id":"g1","name":"%s"}]}`, forgeryMark)
	f.write(conn, "state", "PUBLISH", states, "v1 18446744073709551615\n"+poison)
	f.write(conn, "state", "PUBLISH", states, seal+" 18446744073709551615 "+poison)
	f.write(conn, "state", "PUBLISH", states, fmt.Sprintf("%s %d %s", seal, now, marked))
	f.write(conn, "state", "PUBLISH", states, fmt.Sprintf("%s %d %s", seal, now+60_000, marked))
	f.write(conn, "latest", "SET", latest, seal+" 18446744073709551615 "+poison)
	if f.huge && f.round%10 == 5 {
		huge := seal + " 1 null\n{\"a\":\"" + strings.Repeat("x", 9<<20) + "\"}"
		f.write(conn, "state (9 MiB)", "PUBLISH", states, huge)
	}
	ids, _ := conn.strings("ZRANGE", prefix+":interest:groups", "0", "-1")
	if f.leases && f.round%3 == 0 && len(ids) > 0 {
		f.write(conn, "lease", "SET", lease, ids[f.round%len(ids)])
	}
	if value, err := conn.text("GET", lease); err == nil && strings.Count(value, " ") == 2 {
		f.leaseValues[f.round] = value
	}
	if old, ok := f.leaseValues[f.round-10]; ok && f.leases && f.round%5 == 1 {
		f.write(conn, "lease played back", "SET", lease, old)
	}
	delete(f.leaseValues, f.round-10)
	f.write(conn, "reload", "PUBLISH", prefix+":reload", "groups")
	f.write(conn, "reload", "PUBLISH", prefix+":reload", fmt.Sprintf("%s %d 0000000000000001 groups", seal, now))
	channels, _ := conn.strings("PUBSUB", "CHANNELS", prefix+":replica:*")
	for _, channel := range channels {
		from := strings.TrimPrefix(channel, prefix+":replica:")
		request := fmt.Sprintf(`{"kind":"control","tag":%d,"from":"%s","stream":"%064d","trigger":"reload"}`, f.round, from, 0)
		f.write(conn, "control request", "PUBLISH", channel, request)
		f.write(conn, "control request", "PUBLISH", channel, fmt.Sprintf("%s %d %s", seal, now, request))
		for tag := 0; tag < 5; tag++ {
			f.write(conn, "control reply", "PUBLISH", channel, fmt.Sprintf(`{"kind":"reply","tag":%d,"status":202}`, f.round*5+tag))
		}
	}
	f.mu.Lock()
	overheard := map[string][]byte{}
	for channel, message := range f.overheard {
		overheard[channel] = message
	}
	f.mu.Unlock()
	for channel, message := range overheard {
		f.write(conn, "played back", "PUBLISH", channel, string(message))
	}
}

// sealedByAReplica tells a replica's message from the forger's own: 64 hex digits of a MAC
// (never the forger's guess, all zeros) and a space.
func sealedByAReplica(message string) bool {
	return len(message) > 65 && message[64] == ' ' && !strings.HasPrefix(message, strings.Repeat("0", 64))
}

// write sends one command and counts it under kind when Redis took it.
func (f *forger) write(conn *resp, kind string, arguments ...string) {
	if err := conn.send(arguments...); err != nil {
		return
	}
	if _, err := conn.read(); err != nil {
		return
	}
	f.mu.Lock()
	f.written[kind]++
	f.mu.Unlock()
}

func (f *forger) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, kind := range []string{
		"state", "state (9 MiB)", "latest", "lease", "lease played back", "reload", "control request", "control reply",
		"overheard state", "overheard reload", "played back",
	} {
		parts = append(parts, fmt.Sprintf("%s %d", kind, f.written[kind]))
	}
	return strings.Join(parts, ", ")
}

// resp is a minimal RESP2 client: commands of text arguments, replies as string, int64,
// []any, nil or error.
type resp struct {
	conn   net.Conn
	reader *bufio.Reader
}

func dialRESP(port int) (*resp, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	return &resp{conn: conn, reader: bufio.NewReaderSize(conn, 1<<16)}, nil
}

func (r *resp) close() { r.conn.Close() }

func (r *resp) send(arguments ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(arguments))
	for _, argument := range arguments {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(argument), argument)
	}
	_, err := r.conn.Write([]byte(b.String()))
	return err
}

func (r *resp) read() (any, error) {
	line, err := r.reader.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty RESP line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, fmt.Errorf("redis: %s", line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		length, _ := strconv.Atoi(line[1:])
		if length < 0 {
			return nil, nil
		}
		data := make([]byte, length+2)
		if _, err := io.ReadFull(r.reader, data); err != nil {
			return nil, err
		}
		return string(data[:length]), nil
	case '*':
		count, _ := strconv.Atoi(line[1:])
		var elements []any
		for i := 0; i < count; i++ {
			element, err := r.read()
			if err != nil {
				return nil, err
			}
			elements = append(elements, element)
		}
		return elements, nil
	}
	return nil, fmt.Errorf("RESP type %q", line[0])
}

// text runs a command whose reply is a string.
func (r *resp) text(arguments ...string) (string, error) {
	if err := r.send(arguments...); err != nil {
		return "", err
	}
	reply, err := r.read()
	if err != nil {
		return "", err
	}
	text, _ := reply.(string)
	return text, nil
}

// strings runs a command whose reply is an array of strings.
func (r *resp) strings(arguments ...string) ([]string, error) {
	if err := r.send(arguments...); err != nil {
		return nil, err
	}
	reply, err := r.read()
	if err != nil {
		return nil, err
	}
	elements, _ := reply.([]any)
	var texts []string
	for _, element := range elements {
		if text, ok := element.(string); ok {
			texts = append(texts, text)
		}
	}
	return texts, nil
}
