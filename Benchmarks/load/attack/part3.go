package main

// The part-3 attacks (DESIGN.md, "Contract, part 3"): inputs from outside that reach the
// token verifier, the parameter router, identity forwarding and the rate limiter. Each is a
// bounded number of loopback connections for a bounded time at a bounded request rate, like
// the other attacks, and they need the derived configuration (part3config.go):
//
//	tokens     HS256 JWTs whose exp/nbf/iat are 0, -1, 2^53, 2^63, 2^64, 1e308, 1e999, strings,
//	           null …, in the Authorization header, the tributary_token cookie or access_token;
//	           JSON GETs and event streams (held -stream-hold, then closed) of a public, a
//	           token-only and an /events route
//	params     parameter values: dot segments, encoded slashes and NULs, invalid UTF-8, the
//	           Kelvin sign and K, NFC and NFD é, 1,024- and 1,025-byte values; on the shipped
//	           /teams/{team}/groups (pattern) and /anyteam/{team}/groups (none), as path and
//	           query values, JSON and streams and /events
//	forwarded  GET /me/groups (its upstream forwards Authorization) with an Authorization
//	           header that brings the request head to just under server.maxHeaderBytes, each
//	           value new (a new identity every time): JSON GETs and streams, and two in 32 just
//	           over the limit
//	xff        200,000 distinct X-Forwarded-For clients (IPv4, IPv6, garbage) from the trusted
//	           loopback peer, pipelined over keep-alive connections
//
// Every request of tokens, params and forwarded also names a client of its own in
// X-Forwarded-For (10.K.x.y): as from a botnet, so no per-client limit (32 streams, a
// client's share of pipelines) stands between the inputs and what they reach.
// Every answer is counted by its status and error code; the expected ones are 200, 400, 401,
// 403, 404, 429, 431, 502 (an upstream 404 for a team the fixture lacks) and 503.

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MARK: - Requests and answers

// probe is one request of a part-3 attack.
type probe struct {
	request []byte
	stream  bool   // an event stream: its own connection, held, then closed
	label   string // how its answers are counted: "json", "stream", "json-over", …
}

// botnet names request i of attack `attack` as a client of its own: 10.attack.x.y.
func botnet(attack, i int) string {
	return fmt.Sprintf("10.%d.%d.%d", attack, (i>>8)&255, i&255)
}

func buildRequest(path, addr, xff string, stream bool, headers ...string) []byte {
	var b bytes.Buffer
	b.WriteString("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n")
	if xff != "" {
		b.WriteString("X-Forwarded-For: " + xff + "\r\n")
	}
	if stream {
		b.WriteString("Accept: text/event-stream\r\n")
	}
	for _, header := range headers {
		b.WriteString(header + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// answer reads one response's head and, unless it is a 200 event stream, its body. The
// outcome is "STATUS" or "STATUS code" (the JSON error's `code`); keep is false when the
// connection cannot carry another request.
func answer(reader *bufio.Reader) (status int, outcome string, headers map[string]string, keep bool, err error) {
	line, err := reader.ReadString('\n')
	if err != nil {
		return 0, "", nil, false, err
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/") {
		return 0, "", nil, false, fmt.Errorf("not a status line: %.60q", line)
	}
	status, _ = strconv.Atoi(fields[1])
	headers = map[string]string{}
	for {
		h, err := reader.ReadString('\n')
		if err != nil {
			return status, fields[1], headers, false, err
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		if colon := strings.IndexByte(h, ':'); colon > 0 {
			headers[strings.ToLower(h[:colon])] = strings.TrimSpace(h[colon+1:])
		}
	}
	keep = !strings.EqualFold(headers["connection"], "close")
	outcome = fields[1]
	if status == 200 && strings.HasPrefix(headers["content-type"], "text/event-stream") {
		return status, outcome, headers, false, nil
	}
	var body []byte
	switch {
	case strings.EqualFold(headers["transfer-encoding"], "chunked"):
		body, err = readChunked(reader)
	case headers["content-length"] != "":
		n, convErr := strconv.Atoi(headers["content-length"])
		if convErr != nil || n < 0 {
			return status, outcome, headers, false, fmt.Errorf("bad Content-Length %q", headers["content-length"])
		}
		body = make([]byte, n)
		_, err = io.ReadFull(reader, body)
	default:
		keep = false
		body, err = io.ReadAll(io.LimitReader(reader, 1<<20))
	}
	if err != nil {
		return status, outcome, headers, false, err
	}
	if status >= 400 {
		if code := errorCode(body); code != "" {
			outcome += " " + code
		}
	}
	return status, outcome, headers, keep, nil
}

func readChunked(reader *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			return body, err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil || size < 0 || size > 64<<20 {
			return body, fmt.Errorf("bad chunk size %.40q", line)
		}
		if size == 0 {
			_, err = reader.ReadString('\n')
			return body, err
		}
		chunk := make([]byte, size+2)
		if _, err := io.ReadFull(reader, chunk); err != nil {
			return body, err
		}
		body = append(body, chunk[:size]...)
	}
}

// errorCode is the `code` of a JSON error answer ({"error":{"code":…}} or {"code":…}).
func errorCode(body []byte) string {
	at := bytes.Index(body, []byte(`"code":"`))
	if at < 0 {
		return ""
	}
	rest := body[at+8:]
	if end := bytes.IndexByte(rest, '"'); end >= 0 && end <= 64 {
		return string(rest[:end])
	}
	return ""
}

// noAnswer names why a request got no answer.
func noAnswer(err error) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer (timeout)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "no answer (closed)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "no answer (reset)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "no answer (refused)"
	default:
		return "no answer (" + firstLine(err.Error()) + ")"
	}
}

// keepAlive is one connection that carries JSON GETs one after the other.
type keepAlive struct {
	conn   net.Conn
	reader *bufio.Reader
}

func (k *keepAlive) close() {
	if k.conn != nil {
		k.conn.Close()
		k.conn, k.reader = nil, nil
	}
}

// roundTrip sends one request on the connection (dialled if need be) and reads its answer.
func (k *keepAlive) roundTrip(addr string, request []byte, st *attackStats) string {
	if k.conn == nil {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			st.dialFails.Add(1)
			return "no answer (connect failed)"
		}
		st.connected.Add(1)
		k.conn, k.reader = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := k.conn.Write(request)
	st.bytes.Add(int64(n))
	if err != nil {
		k.close()
		return noAnswer(err)
	}
	_, outcome, _, keep, err := answer(k.reader)
	if err != nil {
		k.close()
		if outcome != "" {
			return outcome + " (then broken)"
		}
		return noAnswer(err)
	}
	if !keep {
		k.close()
	}
	return outcome
}

// streamOnce opens an event stream on a connection of its own, holds it for `hold` (reading
// what comes) unless the service ends it first, and closes it. The outcome names an `event:
// error` the service ended it with.
func streamOnce(addr string, request []byte, hold time.Duration, end time.Time, st *attackStats) string {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		st.dialFails.Add(1)
		return "no answer (connect failed)"
	}
	st.connected.Add(1)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Write(request)
	st.bytes.Add(int64(n))
	if err != nil {
		return noAnswer(err)
	}
	reader := bufio.NewReaderSize(conn, 16<<10)
	status, outcome, _, _, err := answer(reader)
	if err != nil {
		if outcome != "" {
			return outcome + " (then broken)"
		}
		return noAnswer(err)
	}
	if status != 200 {
		return outcome
	}
	st.opened.Add(1)
	until := time.Now().Add(hold)
	if until.After(end) {
		until = end
	}
	conn.SetReadDeadline(until)
	var seen []byte
	buffer := make([]byte, 16<<10)
	for {
		n, err := reader.Read(buffer)
		if len(seen) < 64<<10 {
			seen = append(seen, buffer[:n]...)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return outcome // held until the end: the client closes
			}
			ended := outcome + " ended by the service"
			if at := bytes.Index(seen, []byte("event: error")); at >= 0 {
				if code := errorCode(seen[at:]); code != "" {
					ended += " (event: error " + code + ")"
				}
			}
			return ended
		}
	}
}

// probing runs spec.count workers that send next(i) for i = 0, 1, 2 … at spec.perSecond in
// all, until the attack's end: JSON GETs on each worker's keep-alive connection; streams,
// each on a connection of its own and held spec.hold, at most spec.streams at once (a worker
// waits for a free one). At the end every connection is closed.
func probing(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup, next func(i int) probe) {
	st.started = start
	end := start.Add(spec.duration)
	pace := newRequestLimiter(spec.perSecond)
	var counter atomic.Int64
	var workers, streams sync.WaitGroup
	streamSlots := make(chan struct{}, spec.streams)
	for w := 0; w < spec.count; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			var k keepAlive
			defer k.close()
			for pace.wait(1, end) {
				p := next(int(counter.Add(1) - 1))
				st.requests.Add(1)
				if !p.stream {
					st.answered(p.label + " " + k.roundTrip(addr, p.request, st))
					continue
				}
				streamSlots <- struct{}{}
				streams.Add(1)
				go func() {
					defer func() { <-streamSlots; streams.Done() }()
					st.answered(p.label + " " + streamOnce(addr, p.request, spec.hold, end, st))
				}()
			}
		}()
	}
	connected.Done()
	workers.Wait()
	streams.Wait()
	st.stopped = time.Now()
}

// newRequestLimiter paces requests: perSecond in all (0: no cap).
func newRequestLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{nsPerByte: 1e9 / perSecond}
}

// MARK: - Tokens

var b64 = base64.RawURLEncoding

// signHS256 is the compact JWS of `header` and `payload` (JSON texts, written as given)
// signed with `secret`.
func signHS256(secret []byte, header, payload string) string {
	input := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + b64.EncodeToString(mac.Sum(nil))
}

// extremeNumbers are the values the tokens attack gives exp, nbf and iat, as JSON texts:
// NumericDates at and past every integer and floating-point limit, and not numbers at all.
var extremeNumbers = []string{
	"0", "-1", "9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808",
	"18446744073709551616", "-9223372036854775809", "1e308", "1.7976931348623157e308", "1e999", "-1e999",
	"4.9e-324", "1.5", "-0", `"1700000000"`, `"soon"`, "null", "true", "[]", "{}",
}

type tokenCase struct {
	name  string
	token func(secret []byte, sub string, now int64) string
}

const hs256Header = `{"alg":"HS256","typ":"JWT"}`

func claims(sub string, now int64, override, value string) string {
	values := map[string]string{
		"exp": strconv.FormatInt(now+3600, 10), "nbf": strconv.FormatInt(now-60, 10), "iat": strconv.FormatInt(now, 10),
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"sub":%q,"iss":%q,"aud":%q`, sub, jwtIssuer, jwtAudience)
	for _, name := range []string{"exp", "nbf", "iat"} {
		v := values[name]
		if name == override {
			v = value
		}
		if v != "" {
			fmt.Fprintf(&b, `,%q:%s`, name, v)
		}
	}
	return b.String() + "}"
}

// tokenCases: each extreme value in each of exp, nbf and iat (the others valid), then
// tokens valid and invalid in other ways.
func tokenCases(nested bool) []tokenCase {
	var cases []tokenCase
	for _, claim := range []string{"exp", "nbf", "iat"} {
		for _, value := range extremeNumbers {
			claim, value := claim, value
			cases = append(cases, tokenCase{claim + "=" + value, func(secret []byte, sub string, now int64) string {
				return signHS256(secret, hs256Header, claims(sub, now, claim, value))
			}})
		}
	}
	padded := func(length int) func([]byte, string, int64) string {
		return func(secret []byte, sub string, now int64) string {
			base := claims(sub, now, "", "")
			token := signHS256(secret, hs256Header, base)
			pad := (length - len(token)) * 3 / 4
			for ; ; pad++ {
				token = signHS256(secret, hs256Header, base[:len(base)-1]+`,"pad":"`+strings.Repeat("p", pad)+`"}`)
				if len(token) >= length {
					return token
				}
			}
		}
	}
	cases = append(cases,
		tokenCase{"valid", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, hs256Header, claims(sub, now, "", ""))
		}},
		tokenCase{"no exp", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, hs256Header, claims(sub, now, "exp", ""))
		}},
		tokenCase{"exp in 2 s", func(secret []byte, sub string, now int64) string {
			// Past exp + leeway (30 s) only after the stream is closed: accepted.
			return signHS256(secret, hs256Header, claims(sub, now, "exp", strconv.FormatInt(now+2, 10)))
		}},
		tokenCase{"exp 29 s ago", func(secret []byte, sub string, now int64) string {
			// Within the leeway for a second: accepted, and its stream ends with token_expired.
			return signHS256(secret, hs256Header, claims(sub, now, "exp", strconv.FormatInt(now-29, 10)))
		}},
		tokenCase{"2048 bytes", padded(2048)},
		tokenCase{"2049 bytes", padded(2049)},
		tokenCase{"alg none", func(secret []byte, sub string, now int64) string {
			return b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b64.EncodeToString([]byte(claims(sub, now, "", ""))) + "."
		}},
		tokenCase{"wrong key", func(secret []byte, sub string, now int64) string {
			return signHS256([]byte("not-the-key-not-the-key-not-the-key!"), hs256Header, claims(sub, now, "", ""))
		}},
		tokenCase{"unknown kid", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, `{"alg":"HS256","kid":"nobody"}`, claims(sub, now, "", ""))
		}},
		tokenCase{"sub 0 bytes", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, hs256Header, strings.Replace(claims(sub, now, "", ""), strconv.Quote(sub), `""`, 1))
		}},
		tokenCase{"payload not JSON", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, hs256Header, `{"sub":`+strings.Repeat("[", 100))
		}},
		tokenCase{"payload 1000 arrays deep, closed", func(secret []byte, sub string, now int64) string {
			return signHS256(secret, hs256Header, `{"sub":`+strings.Repeat("[", 999)+strings.Repeat("]", 999)+`}`)
		}},
	)
	if nested {
		cases = append(cases,
			// A JSON text that ends at the 513th nested array: JSONDecoder's depth limit is 512,
			// and Swift 6.3.1's FoundationEssentials traps building that error's location.
			// The service decodes a token (jwt-kit) before it checks the signature.
			tokenCase{"payload ends 513 arrays deep", func(secret []byte, sub string, now int64) string {
				return signHS256(secret, hs256Header, `{"sub":`+strings.Repeat("[", 512))
			}},
			tokenCase{"header ends 513 arrays deep", func(secret []byte, sub string, now int64) string {
				return b64.EncodeToString([]byte(strings.Repeat("[", 513))) + "." + b64.EncodeToString([]byte(claims(sub, now, "", ""))) + ".x"
			}},
		)
	}
	cases = append(cases,
		tokenCase{"three dots", func([]byte, string, int64) string { return "a.b.c" }},
		tokenCase{"not base64", func([]byte, string, int64) string { return "%%%.***.!!!" }},
	)
	return cases
}

// tokenProbes: request i carries case i mod n, with a subject of its own; each pass over the
// cases the next delivery (header, cookie, query), each third pass the next route (public,
// token-only, /events); one in four an event stream (/events always).
func tokenProbes(addr string, secret []byte, nested bool) func(int) probe {
	cases := tokenCases(nested)
	routes := []string{"/groups", "/secure/groups", "/events?resource=groups&resource=securegroups"}
	return func(i int) probe {
		c := cases[i%len(cases)]
		pass := i / len(cases)
		stream := (pass+i)%4 == 0
		delivery := pass % 3
		route := routes[(pass/3)%3]
		if strings.HasPrefix(route, "/events") {
			stream = true // /events is a stream or nothing
		}
		token := c.token(secret, fmt.Sprintf("attack-%d", i), time.Now().Unix())
		var headers []string
		path := route
		switch delivery {
		case 0:
			headers = append(headers, "Authorization: Bearer "+token)
		case 1:
			headers = append(headers, "Cookie: theme=dark; tributary_token="+token)
		case 2:
			separator := "?"
			if strings.Contains(path, "?") {
				separator = "&"
			}
			path += separator + "access_token=" + token
		}
		label := "json"
		if stream {
			label = "stream"
		}
		return probe{request: buildRequest(path, addr, botnet(1, i), stream, headers...), stream: stream, label: label}
	}
}

// MARK: - Parameters

// long is a value of exactly `bytes` decoded bytes, distinct for each i: digits, then `unit`
// (percent-encoded, `unitBytes` decoded) repeated, then 'a' to fill.
func long(i, bytes int, unit string, unitBytes int) string {
	prefix := fmt.Sprintf("%07d", i%10000000)
	n := (bytes - len(prefix)) / unitBytes
	return prefix + strings.Repeat(unit, n) + strings.Repeat("a", bytes-len(prefix)-n*unitBytes)
}

// paramValues are raw (as sent) path segments and query values; $LONG forms are made per
// request.
var paramValues = []string{
	".", "..", "%2e", "%2E%2e", ".%2e", "%2e.", "..%2F..", "..%2f..%2f..%2fetc%2fpasswd", "%2F", "a%2Fb", "%2F..",
	"%5C..", "%00", "core%00", "%FF", "%C0%AE%C0%AE", "%ED%A0%80", "%E2%84%AA", "K", "k", "%EF%BC%AB",
	"%C3%A9", "e%CC%81", "core", "%20", "+", "%25", "%", "%zz", "%2", "a;b", "%3F", "%23", "%0D%0A",
	"$1024", "$1025", "$1024K", "$1025K",
}

func paramValue(raw string, i int) string {
	switch raw {
	case "$1024":
		return long(i, 1024, "b", 1)
	case "$1025":
		return long(i, 1025, "b", 1)
	case "$1024K":
		return long(i, 1024, "%E2%84%AA", 3)
	case "$1025K":
		return long(i, 1025, "%E2%84%AA", 3)
	}
	return raw
}

// paramProbes: request i carries value i mod n on one of the routes below (the next route
// each pass over the values), one in four as an event stream (/events always).
func paramProbes(addr string) func(int) probe {
	routes := []string{
		"/teams/%s/groups", "/anyteam/%s/groups", "/teams/core/groups?status=%s", "/anyteam/core/groups?status=%s",
		"/anyteam/%s/groups?status=done", "/events?resource=teamgroups&teamgroups.team=%s",
		"/events?resource=anyteam&anyteam.team=%s&anyteam.status=open",
	}
	return func(i int) probe {
		raw := paramValues[i%len(paramValues)]
		pass := i / len(paramValues)
		route := routes[pass%len(routes)]
		// Each value on each route, JSON and stream, within 28 passes.
		stream := (pass+i)%4 == 0 || strings.HasPrefix(route, "/events")
		value := paramValue(raw, i)
		label := "json"
		if stream {
			label = "stream"
		}
		return probe{request: buildRequest(fmt.Sprintf(route, value), addr, botnet(2, i), stream), stream: stream, label: label}
	}
}

// MARK: - Forwarded credentials

// forwardedProbes: GET /me/groups (or an /events stream of it) whose Authorization header
// makes the request head `headBytes` long, each value new: by turns `Basic …` (not a token:
// anonymous, and forwarded) and `Bearer <a signed JWT of that size>` (verified, then
// forwarded). Two requests in 32 are 64 bytes over the limit instead (431 expected).
func forwardedProbes(addr string, secret []byte, maxHeaderBytes int) func(int) probe {
	under := maxHeaderBytes - 64
	over := maxHeaderBytes + 64
	return func(i int) probe {
		var path, label string
		stream := false
		switch (i / 2) % 4 {
		case 0, 1:
			path, label = "/me/groups", "json"
		case 2:
			path, label, stream = "/me/groups", "stream", true
		case 3:
			path, label, stream = "/events?resource=mygroups", "stream", true
		}
		target := under
		if i%32 >= 30 { // both forms
			target, label, stream = over, "json-over", false
			path = "/me/groups"
		}
		xff := botnet(3, i)
		rest := len(buildRequest(path, addr, xff, stream, "Authorization: "))
		room := target - rest
		var value string
		if i%2 == 0 {
			prefix := fmt.Sprintf("Basic %08d", i)
			value = prefix + strings.Repeat("Q", room-len(prefix))
		} else {
			value = "Bearer " + jwtOfLength(secret, fmt.Sprintf("forwarded-%d", i), room-len("Bearer "))
		}
		return probe{request: buildRequest(path, addr, xff, stream, "Authorization: "+value), stream: stream, label: label}
	}
}

// jwtOfLength is a valid token for `sub` of `length` bytes or up to 3 fewer (base64 grows
// by 4 characters per 3 bytes), padded with a claim the service ignores.
func jwtOfLength(secret []byte, sub string, length int) string {
	base := claims(sub, time.Now().Unix(), "", "")
	with := func(pad int) string {
		return signHS256(secret, hs256Header, base[:len(base)-1]+`,"pad":"`+strings.Repeat("p", pad)+`"}`)
	}
	pad := (length - len(with(0))) * 3 / 4
	if pad < 0 {
		pad = 0
	}
	for pad > 0 && len(with(pad)) > length {
		pad--
	}
	for len(with(pad+1)) <= length {
		pad++
	}
	return with(pad)
}

// MARK: - X-Forwarded-For clients

// xffValue is client i's X-Forwarded-For: of every 20, 8 IPv4 addresses, 2 with a port,
// 6 IPv6 addresses each in a /64 of its own, 1 another address of the /64 before it, and 3
// that are no address at all (some of them up to 1,792 bytes long) or that put an address
// left of a trusted one.
func xffValue(i int) string {
	v4 := fmt.Sprintf("11.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255)
	v6 := fmt.Sprintf("2001:db8:%x:%x::1", (i>>16)&0xffff, i&0xffff)
	switch i % 20 {
	case 0, 1, 2, 3, 4, 5, 6, 7:
		return v4
	case 8, 9:
		return v4 + ":4711"
	case 10, 11, 12, 13, 14, 15:
		return v6
	case 16:
		return fmt.Sprintf("2001:db8:%x:%x::%x", ((i-1)>>16)&0xffff, (i-1)&0xffff, i&0xffff)
	case 17:
		return fmt.Sprintf("garbage-%d-%s", i, strings.Repeat("g", (i/20%8)*256))
	case 18:
		forms := []string{"999.999.999.%d", "[2001:db8::%x", "unknown-%d", "1.2.3.4:%d9999", "_hidden%d", "0x7f.%d"}
		return fmt.Sprintf(forms[(i/20)%len(forms)], i)
	default:
		return "6.6.6.6, " + v4 + ", 127.0.0.1"
	}
}

// The kinds of xff request. The default mix, refused ×3 then admitted, is three in four
// with a token that does not verify and one in four without:
//   - refused:  by turns GET /groups and GET /limited/groups with `Authorization: Bearer
//     not-a-token` (a 401 after the limit has counted it: a cheap answer, the same bucket);
//   - shared:   GET /groups without a token (the server's 1,000,000/s limit): it joins the
//     honest clients' fetch of /groups in flight, if there is one;
//   - admitted: GET /limited/groups without a token (1/m: the bucket lasts a minute): the
//     client's first request is a whole fetch of its own, list and details.
//
// One in 16 repeats the client two before it, which /limited/groups answers 429.
var xffKinds = []string{"refused", "shared", "admitted"}
var xffDefaultMix = []string{"refused", "refused", "refused", "admitted"}

// xffRequest is client i's request, of the kind mix[i % len(mix)].
func xffRequest(addr string, i int, mix []string) []byte {
	client := i
	if i%16 == 15 {
		client = i - 2
	}
	var path string
	var headers []string
	switch mix[i%len(mix)] {
	case "refused":
		path = "/groups"
		if i%2 == 1 {
			path = "/limited/groups"
		}
		headers = append(headers, "Authorization: Bearer not-a-token")
	case "shared":
		path = "/groups"
	default: // admitted
		path = "/limited/groups"
	}
	return buildRequest(path, addr, xffValue(client), false, headers...)
}

// xff sends spec.clients requests, each from client i of xffValue, pipelined spec.depth at a
// time over spec.count keep-alive connections, at spec.perSecond in all, until they are sent
// or the attack's end.
func xff(addr string, spec attackSpec, start time.Time, st *attackStats, connected *sync.WaitGroup) {
	st.started = start
	if spec.target != "" {
		addr = spec.target
	}
	mix := spec.mix
	if len(mix) == 0 {
		mix = xffDefaultMix
	}
	end := start.Add(spec.duration)
	pace := newRequestLimiter(spec.perSecond)
	depth := spec.depth
	if depth < 1 {
		depth = 1
	}
	var counter atomic.Int64
	var workers sync.WaitGroup
	for w := 0; w < spec.count; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			var k keepAlive
			defer k.close()
			for {
				first := int(counter.Add(int64(depth)) - int64(depth))
				if first >= spec.clients || !pace.wait(depth, end) {
					return
				}
				n := depth
				if first+n > spec.clients {
					n = spec.clients - first
				}
				var batch bytes.Buffer
				for i := first; i < first+n; i++ {
					batch.Write(xffRequest(addr, i, mix))
				}
				st.requests.Add(int64(n))
				if k.conn == nil {
					conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err != nil {
						st.dialFails.Add(1)
						st.answeredN("no answer (connect failed)", n)
						continue
					}
					st.connected.Add(1)
					k.conn, k.reader = conn, bufio.NewReaderSize(conn, 64<<10)
				}
				k.conn.SetDeadline(time.Now().Add(5 * time.Second))
				written, err := k.conn.Write(batch.Bytes())
				st.bytes.Add(int64(written))
				if err != nil {
					k.close()
					st.answeredN(noAnswer(err), n)
					continue
				}
				for got := 0; got < n; got++ {
					_, outcome, _, keep, err := answer(k.reader)
					if err != nil {
						k.close()
						st.answeredN(noAnswer(err), n-got)
						break
					}
					st.answered(outcome)
					if !keep {
						k.close()
						st.answeredN("no answer (closed)", n-got-1)
						break
					}
				}
			}
		}()
	}
	connected.Done()
	workers.Wait()
	st.stopped = time.Now()
}
