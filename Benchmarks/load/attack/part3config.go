package main

// The configuration the part-3 attacks (tokens, params, forwarded, xff) need: the shipped
// config/tributary.yaml with what it leaves off turned on. Written as text around the
// shipped file (this tool reads no YAML), so everything the shipped file says still holds.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names the derived configuration gives the attacks; the attacks use the same.
const (
	jwtIssuer   = "tributary-attack"
	jwtAudience = "tributary-attack"
	// The HS256 key reaches the service through this variable (`${VAR}` in the file), so it
	// is neither in the file nor in any report.
	jwtSecretVariable = "TRIBUTARY_ATTACK_JWT_SECRET"
	// server.maxHeaderBytes of the shipped configuration: the forwarded attack's requests are
	// sized to just under it.
	shippedMaxHeaderBytes = 16384
)

// newJWTSecret is a fresh 64-character key for one run.
func newJWTSecret() string {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return hex.EncodeToString(raw)
}

// part3Additions: under `server:`, a trusted loopback proxy and an address limit far above
// what wrk's one client asks (1,000,000/s), so that honest traffic is never limited but
// every X-Forwarded-For client gets a bucket; under `resources:`, three resources the
// shipped file lacks; at the end, `auth.jwt`, so that every route verifies the tokens it is
// given. The shipped resources (groups, teamgroups, mygroups, rows, search) stay as they are.
var (
	part3Server = []string{
		"  # added by Benchmarks/load/attack (part-3 attacks): wrk's one loopback client is never",
		"  # limited; every X-Forwarded-For client gets a bucket",
		"  trustedProxies: [127.0.0.1/32]",
		"  rateLimit: {rate: 1000000/s, burst: 1000000, by: ip}",
	}
	part3Resources = []string{
		"  # added by Benchmarks/load/attack (part-3 attacks):",
		"  # /secure/groups needs a token: per identity, keyed by the token's sub",
		"  securegroups:",
		"    kind: list",
		"    upstream: tasks",
		"    route: /secure/groups",
		"    auth: {required: true}",
		"    list: {path: /groups, items: result, id: id}",
		"    details: {path: \"/groups/{id}/metadata\", value: result}",
		"    refreshInterval: 5s",
		"  # /anyteam/{team}/groups takes any team (no pattern): the values the shipped pattern",
		"  # refuses reach the upstream paths and the pipeline keys here",
		"  anyteam:",
		"    kind: list",
		"    upstream: tasks",
		"    route: /anyteam/{team}/groups",
		"    parameters:",
		"      team: {}",
		"      status: {in: query, enum: [open, done], default: open}",
		"    list: {path: \"/teams/{team}/groups?status={status}\", items: result, id: id}",
		"    details: {path: \"/teams/{team}/groups/{id}/metadata\", value: result}",
		"    refreshInterval: 5s",
		"  # /limited/groups keeps a client's bucket for a minute (1/m): the limiter must hold",
		"  # 200,000 clients' buckets at once (under the server's 1,000,000/s a bucket is empty",
		"  # again a microsecond later)",
		"  limited:",
		"    kind: list",
		"    upstream: tasks",
		"    route: /limited/groups",
		"    rateLimit: {rate: 1/m, burst: 1, by: ip}",
		"    list: {path: /groups, items: result, id: id}",
		"    details: {path: \"/groups/{id}/metadata\", value: result}",
	}
	part3Auth = []string{
		"",
		"# added by Benchmarks/load/attack (part-3 attacks): every route verifies the tokens it gets",
		"auth:",
		"  jwt:",
		"    issuer: " + jwtIssuer,
		"    audience: " + jwtAudience,
		"    keys:",
		"      - {alg: HS256, secret: \"${" + jwtSecretVariable + "}\"}",
	}
)

// writePart3Config writes the derived configuration into dir and returns its path. The
// shipped file must have top-level `server:` and `resources:` sections and no `auth:`.
func writePart3Config(dir, shipped string) (string, error) {
	data, err := os.ReadFile(shipped)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	sawServer, sawResources := false, false
	for _, line := range lines {
		if strings.HasPrefix(line, "auth:") {
			return "", fmt.Errorf("%s already has an auth section: the derived configuration would name it twice", shipped)
		}
		out = append(out, line)
		switch strings.TrimRight(line, " ") {
		case "server:":
			out = append(out, part3Server...)
			sawServer = true
		case "resources:":
			out = append(out, part3Resources...)
			sawResources = true
		}
	}
	if !sawServer || !sawResources {
		return "", fmt.Errorf("%s: no top-level server: or resources: line to add to", shipped)
	}
	out = append(out, part3Auth...)
	text := "# derived by Benchmarks/load/attack from " + shipped + "\n" + strings.Join(out, "\n") + "\n"
	path := filepath.Join(dir, "tributary-part3.yaml")
	return path, os.WriteFile(path, []byte(text), 0o600)
}
