// The foundation benchmark's server: evhttp through Tributary's HTTPServer module, in one of
// two modes, for Benchmarks/foundation.sh to measure side by side with nginx.
//
//   FoundationBench hello PORT            answer every request with the bytes of hello.json
//   FoundationBench proxy PORT UPSTREAM   answer every request with one pooled upstream call
//                                         (GET UPSTREAM/hello.json) through UpstreamClient
//   FoundationBench gzip FILE [COUNT]     compress FILE COUNT times (10,000) with Libevent's Gzip
//                                         at levels 1 and 6, reused and fresh each time: bytes out
//                                         and CPU µs per compression (README, "Caching and compression")
//   FoundationBench trace [COUNT]         CPU ns of W3C trace context work: a request's traceparent
//                                         parsed, a new trace made, one upstream call's headers
//                                         (README, "Tracing")
//   FoundationBench patch [ITEMS] [COUNT] CPU µs of the JSON Patch of one change of a list of ITEMS
//                                         (1,000) groups: one or ten items changed, one moved, one
//                                         added; the diff alone, and with the new document parsed and
//                                         the patch written, as a live stream's change costs it
//                                         (Benchmarks/README.md, "Patches")
import Aggregation
import Glibc
import EventLoop
import HTTPCore
import HTTPServer
import UpstreamClient

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

/// The bytes of the file at `path`.
func contents(of path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count == 0 { return bytes }
        bytes += chunk[..<count]
    }
}

/// CPU time of the process so far, in microseconds.
func cpuMicroseconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) * 1e6 + Double(now.tv_nsec) / 1e3
}

func measureGzip(arguments: [String]) {
    guard arguments.count >= 3 else { fail("usage: FoundationBench gzip FILE [COUNT]") }
    let body = contents(of: arguments[2])
    let count = arguments.count > 3 ? Int(arguments[3]) ?? 10_000 : 10_000
    print("\(arguments[2]): \(body.count) bytes, \(count) compressions each")
    for level: Int32 in [1, 6] {
        for reused in [true, false] {
            let shared = Gzip(level: level)
            var size = 0
            let started = cpuMicroseconds()
            for _ in 0..<count { size = (reused ? shared : Gzip(level: level)).compress(body).count }
            let perCall = (cpuMicroseconds() - started) / Double(count)
            let label = "level \(level), \(reused ? "reused stream" : "fresh stream ")"
            print("  \(label): \(size) bytes, \((perCall * 10).rounded() / 10) µs CPU per compression")
        }
    }
}

func measureTrace(arguments: [String]) {
    let count = arguments.count > 2 ? Int(arguments[2]) ?? 1_000_000 : 1_000_000
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    var sink = 0
    func time(_ label: String, _ work: () -> Int) {
        let started = cpuMicroseconds()
        for _ in 0..<count { sink &+= work() }
        print("  \(label): \(((cpuMicroseconds() - started) * 1000 / Double(count)).rounded()) ns CPU")
    }
    print("trace context, \(count) times each")
    time("traceparent parsed") { TraceContext(traceparent: incoming, tracestate: nil).traceID.utf8.count }
    time("new trace") { TraceContext().traceID.utf8.count }
    let trace = TraceContext()
    time("one upstream call's headers") { trace.upstreamHeaders().count }
    if sink == 42 { print(sink) }
}

/// A `/groups` document of `count` groups as the service writes it, with `change` applied to
/// the groups first.
func groupsDocument(_ count: Int, _ change: (inout [[(key: String, value: JSON)]]) -> Void = { _ in }) -> [UInt8] {
    var groups: [[(key: String, value: JSON)]] = (0..<count).map { index in
        [("id", .string("5f0c7a2e-\(1000 + index)-4b1d-9e2a-\(100_000 + index)")), ("name", .string("Group number \(index)")),
         ("taskCount", .integer(index % 50)), ("lastUpdated", .string("2026-11-21T12:00:00Z"))]
    }
    change(&groups)
    return JSON.array(groups.map(JSON.object)).serialized
}

func measurePatch(arguments: [String]) {
    let items = arguments.count > 2 ? Int(arguments[2]) ?? 1_000 : 1_000
    let count = arguments.count > 3 ? Int(arguments[3]) ?? 2_000 : 2_000
    let old = groupsDocument(items)
    let diff = JSONDiff(itemIDs: [JSONPath("id")])
    let changes: [(String, (inout [[(key: String, value: JSON)]]) -> Void)] = [
        ("one item changed", { $0[items / 2][2].value = .integer(999) }),
        ("ten items changed", { groups in for index in stride(from: 0, to: items, by: max(1, items / 10)).prefix(10) { groups[index][2].value = .integer(999) } }),
        ("one item moved", { groups in groups.insert(groups.remove(at: items - 1), at: 0) }),
        ("one item added", { groups in groups.insert([("id", .string("new")), ("name", .string("Added")), ("taskCount", .integer(1))], at: items / 2) }),
    ]
    print("a list of \(items) groups, \(old.count) bytes; \(count) diffs each (the old document parsed once, as the service keeps it)")
    guard let oldDocument = try? JSON(parsing: old, keeping: .objects) else { fail("the document does not parse") }
    for (label, change) in changes {
        let new = groupsDocument(items, change)
        guard let newDocument = try? JSON(parsing: new, keeping: .objects) else { fail("the document does not parse") }
        var size = 0
        var started = cpuMicroseconds()
        for _ in 0..<count { size &+= diff.patch(from: oldDocument, to: newDocument).count }
        let diffOnly = (cpuMicroseconds() - started) / Double(count)
        var patch: [UInt8] = []
        started = cpuMicroseconds()
        for _ in 0..<count {
            guard let parsed = try? JSON(parsing: new, keeping: .objects) else { fail("the document does not parse") }
            patch = JSONPatch.serialized(diff.patch(from: oldDocument, to: parsed))
        }
        let whole = (cpuMicroseconds() - started) / Double(count)
        let round = { (value: Double) in (value * 10).rounded() / 10 }
        print("  \(label): patch \(patch.count) bytes; diff \(round(diffOnly)) µs CPU, with the new document parsed and the patch written \(round(whole)) µs")
        if size == -1 { print(size) }
    }
}

if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "patch" {
    measurePatch(arguments: CommandLine.arguments)
} else if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "gzip" {
    measureGzip(arguments: CommandLine.arguments)
} else if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "trace" {
    measureTrace(arguments: CommandLine.arguments)
} else {
    try serve(arguments: CommandLine.arguments)
}
