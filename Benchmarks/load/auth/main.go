// auth: what requiring a bearer token costs GET /groups, one run side by side: the demo
// upstream's 10 groups with auth off, then with auth.required and ES256 tokens of -clients
// distinct clients (each pays one signature check, then cache lookups).
//
// The tool makes an ES256 key and signs the tokens itself (kid and issuer bench, audience
// tributary, an hour long); wrk sends them round robin from a Lua script, each thread from its
// own offset. Each phase starts a fresh service (a generated configuration: coalescing off as
// in Benchmarks/groups.sh, pool 128, access log off, -workers) on the demo upstream (`tributary
// demo-upstream`), runs `wrk -t2 -c CONNECTIONS -d DURATION --latency` on /groups, and stops it.
//
//	auth -bin PATH [-duration 10s] [-connections 100] [-workers 2] [-clients 100]
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tributary/benchmarks/load/harness"
)

// tokensScript is wrk's Lua script: every request carries the next of the tokens in the file
// (%s), each thread starting 50 further on.
const tokensScript = `local tokens = {}
for line in io.lines("%s") do tokens[#tokens + 1] = line end
local next_client = 0
function setup(thread) thread:set("first", next_client); next_client = next_client + 50 end
function init(args) count = 0 end
function request()
  count = count + 1
  local token = tokens[((first + count) %% #tokens) + 1]
  return wrk.format("GET", "/groups", {["Authorization"] = "Bearer " .. token})
end
`

func main() {
	bin := flag.String("bin", "", "the tributary binary (required)")
	f := harness.DeclareWrkFlags(false)
	clients := flag.Int("clients", 100, "distinct clients (tokens)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: auth -bin PATH [-duration D] [-connections N] [-workers N] [-clients N]")
		os.Exit(2)
	}

	work, err := harness.NewWorkspace("auth", *keep)
	harness.Check(err)
	upstream, err := work.StartDemoUpstream(*bin, "demo-upstream.log")
	work.Check(err)
	publicKey, tokens, err := signTokens(*clients)
	work.Check(err)
	tokensPath := filepath.Join(work.Dir, "tokens")
	work.Check(os.WriteFile(tokensPath, []byte(strings.Join(tokens, "\n")+"\n"), 0o644))
	script := filepath.Join(work.Dir, "tokens.lua")
	work.Check(os.WriteFile(script, []byte(fmt.Sprintf(tokensScript, tokensPath)), 0o644))
	config := harness.Config{Tool: "auth", File: "off.yaml", UpstreamURL: "http://" + upstream.Addr, PoolSize: 128, NoCoalescing: true}
	off, err := harness.WriteConfig(work.Dir, config)
	work.Check(err)
	config.File, config.ES256Key = "on.yaml", publicKey
	on, err := harness.WriteConfig(work.Dir, config)
	work.Check(err)

	fmt.Printf("# GET /groups N=10, wrk -t2 -c%d -d%s, %d workers, coalescing off\n", f.Connections, f.Duration, f.Workers)
	rps := map[string]float64{}
	for _, phase := range []struct{ name, config, script string }{{"auth-off", off, ""}, {"auth-on", on, script}} {
		s, err := work.StartServiceWith(harness.ServiceOptions{Bin: *bin, ConfigPath: phase.config, Workers: f.Workers}, phase.name+".log")
		work.Check(err)
		r := harness.RunWrk(harness.Wrk{URL: "http://" + s.Addr + "/groups", Threads: 2, Connections: f.Connections,
			Duration: f.Duration, Script: phase.script})
		work.Check(r.Err)
		fmt.Printf("%-10s %10.2f req/s   p99 %6.2fms   non-2xx %d\n", phase.name, r.RPS, r.P99, r.Non2xx)
		rps[phase.name] = r.RPS
		s.Stop()
	}
	fmt.Printf("auth on / auth off: %.1f %%\n", rps["auth-on"]/rps["auth-off"]*100)
	work.Close()
}

// signTokens makes an ES256 key and returns its public key (PEM) and `count` tokens signed
// with it, one per client: kid and issuer bench, audience tributary, an hour long.
func signTokens(count int) (string, []string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", nil, err
	}
	publicKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	encode := base64.RawURLEncoding.EncodeToString
	header := encode([]byte(`{"alg":"ES256","kid":"bench","typ":"JWT"}`))
	expires := time.Now().Add(time.Hour).Unix()
	tokens := make([]string, count)
	for client := range tokens {
		claims, err := json.Marshal(map[string]any{"sub": fmt.Sprintf("client-%d", client), "iss": "bench", "aud": "tributary", "exp": expires})
		if err != nil {
			return "", nil, err
		}
		signed := header + "." + encode(claims)
		digest := sha256.Sum256([]byte(signed))
		r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
		if err != nil {
			return "", nil, err
		}
		signature := make([]byte, 64) // r and s, 32 bytes each (JWS's ES256)
		r.FillBytes(signature[:32])
		s.FillBytes(signature[32:])
		tokens[client] = signed + "." + encode(signature)
	}
	return publicKey, tokens, nil
}
