// The foundation benchmark's server: evhttp through Tributary's Libevent module, in one of
// two modes, for Benchmarks/foundation.sh to measure side by side with nginx.
//
//   FoundationBench hello PORT            answer every request with the bytes of hello.json
//   FoundationBench proxy PORT UPSTREAM   answer every request with one pooled upstream call
//                                         (GET UPSTREAM/hello.json) through UpstreamClient
import Glibc
import Libevent

let hello = Array(#"{"hello":"world","from":"tributary"}"#.utf8)

func fail(_ message: String) -> Never {
    let line = Array((message + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

func serve(arguments: [String]) throws {
    guard arguments.count >= 3, let port = UInt16(arguments[2]) else {
        fail("usage: FoundationBench hello PORT | proxy PORT UPSTREAM_URL [POOL]")
    }
    let loop = try EventLoop()
    let server: HTTPServer
    var client: UpstreamClient?
    switch arguments[1] {
    case "hello":
        server = try HTTPServer(loop: loop) { request in
            request.respond(status: 200, headers: [("Content-Type", "application/json")], body: hello)
        }
    case "proxy" where arguments.count >= 4:
        let base = try BaseURL(arguments[3])
        let upstream = UpstreamClient(loop: loop, configuration: .init(defaultPoolCapacity: arguments.count > 4 ? Int(arguments[4]) ?? 128 : 128))
        client = upstream
        let path = "/hello.json"
        server = try HTTPServer(loop: loop) { request in
            let call = upstream.execute(UpstreamRequest(base: base, path: path)) { result in
                switch result {
                case .success(let response):
                    request.respond(status: response.status, headers: [("Content-Type", "application/json")], body: response.body)
                case .failure(let error):
                    request.respond(HTTPError(status: 502, code: "upstream_failed", message: error.description))
                }
            }
            request.onDisconnect = { call.cancel() }
        }
    default:
        fail("unknown mode \(arguments[1])")
    }
    try server.bind(host: "127.0.0.1", port: port)
    let stop = try SignalWatcher(loop: loop, signal: SIGTERM) { loop.stop() }
    try withExtendedLifetime((server, client, stop)) { try loop.run() }
}

try serve(arguments: CommandLine.arguments)
