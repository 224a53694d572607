// swift-tools-version: 6.1
import PackageDescription

/// Every target of ours is built in the Swift 6 language mode with these upcoming features.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The service's own modules: release builds leave out the runtime exclusivity checks.
/// Every access to a class's stored `var` (connections, pools, subscriptions) was checked
/// at run time, through a thread-local access set, many times in every request
/// (`Benchmarks/groups-cpu.sh callgrind 10` shows them). Debug builds keep the checks,
/// and every test (the AddressSanitizer pass included) runs on a debug build. Rivers, a
/// library of its own, keeps them. The cost: SwiftPM refuses unsafe flags in a dependency
/// taken by version, so another package can use the EventLoop, HTTPServer, UpstreamClient
/// and Redis products only from a branch or a local path (they are the service's modules, not released on their own).
let serviceSettings: [SwiftSetting] = strictSettings + [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "Tributary",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tributary", targets: ["tributary"]),
        .library(name: "Rivers", targets: ["Rivers"]),
        .library(name: "EventLoop", targets: ["EventLoop"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "UpstreamClient", targets: ["UpstreamClient"]),
        .library(name: "Redis", targets: ["Redis"]),
    ],
    traits: [
        // The OTLP exporter (swift-otel over AsyncHTTPClient and SwiftNIO) is most of a clean
        // build's time: about 7.5 minutes of a 2-core debug build, more in release. The test
        // builds leave it out (`--disable-default-traits`: scripts/test, the AddressSanitizer
        // pass); the release binary every black-box test, the image and a user's build run has it.
        .trait(name: "OTLP", description: "Export traces (and metrics when asked) over OTLP/HTTP with swift-otel."),
        .default(enabledTraits: ["OTLP"]),
    ],
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Only its OTLP/HTTP exporter: the gRPC one would add grpc-swift and HTTP/2 to the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // MARK: - libevent: the loop, the HTTP server, the upstream client

        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent",
            providers: [.apt(["libevent-dev", "libssl-dev"])]
        ),
        /// zlib, for gzip answers (`Gzip`).
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        /// The fields of evhttp's request struct that libevent 2.1 has no call for (chunk framing, HTTP version, body parsing state).
        .target(name: "CEvhttpRequestFields"),
        /// One libevent `event_base` per worker: the loop, timers, an OpenCombine scheduler on it,
        /// signals, name resolution, sockets, TLS contexts, one-result publishers.
        .target(
            name: "EventLoop",
            dependencies: ["CLibevent", "HTTPCore", .product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: serviceSettings
        ),
        /// What both ends of HTTP share, with no libevent in it: methods, the token grammar,
        /// query strings and percent-encoding, W3C trace context.
        .target(name: "HTTPCore", swiftSettings: serviceSettings),
        /// evhttp as the service's server: connections, requests, the framing guard, the router,
        /// answers (HEAD, ETag/304, gzip), event-stream writing, back pressure, disconnects.
        .target(
            name: "HTTPServer",
            dependencies: ["CLibevent", "CEvhttpRequestFields", "CZlib", "EventLoop", "HTTPCore", "Telemetry"],
            swiftSettings: serviceSettings
        ),
        /// Spans of requests, upstream calls and refreshes, through swift-distributed-tracing's
        /// `Tracer`: what the service records; where they go is ``OTLPExport``'s.
        .target(
            name: "Telemetry",
            dependencies: ["HTTPCore", .product(name: "Tracing", package: "swift-distributed-tracing")],
            swiftSettings: serviceSettings
        ),
        /// Tributary's own HTTP/1.1 client for upstream calls: pools, the process-wide
        /// connection budget, deadlines, the response parser, TLS, trace context on every call.
        .target(
            name: "UpstreamClient",
            dependencies: [
                "CLibevent", "CEvhttpRequestFields", "EventLoop", "HTTPCore", "Telemetry",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: serviceSettings
        ),

        // MARK: - Redis, spoken with hiredis on the workers' own loops

        .systemLibrary(
            name: "CHiredis",
            pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        /// hiredis' libevent adapter: `static` functions in a header, compiled once in C.
        .target(name: "CHiredisLibevent", dependencies: ["CHiredis", "CLibevent"]),
        .target(
            name: "Redis",
            dependencies: [
                "CHiredis", "CHiredisLibevent", "CLibevent", "EventLoop",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: serviceSettings
        ),

        // MARK: - Rivers: the reactive toolbox

        .target(
            name: "Rivers",
            dependencies: [.product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),

        // MARK: - Aggregation: resources from upstreams, as pipelines

        .target(
            name: "Aggregation",
            dependencies: [
                "EventLoop", "HTTPCore", "UpstreamClient", "Rivers", "Telemetry",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // Identities: a keyed hash (HMAC-SHA256) of who asks (Sharing/IdentityHasher).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: serviceSettings
        ),

        // MARK: - The service

        /// Everything Tributary is told: each setting declared once (Settings.swift), read from
        /// the file, the environment and the command line, checked, what a reload applies, the
        /// tables of docs/configuration.md and `--help`; config/tributary.yaml compiled in.
        .target(
            name: "TributaryConfiguration",
            dependencies: [
                "Aggregation", "HTTPCore", "UpstreamClient", "Redis",
                .product(name: "Yams", package: "Yams"),
                // A key's PEM is parsed as the configuration is read, so a bad one fails the start.
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            // config/tributary.yaml, through a symbolic link, compiled in (ShippedConfiguration).
            resources: [.embedInCode("shipped.yaml")],
            swiftSettings: serviceSettings
        ),
        /// Who may do what, and how often: bearer tokens (where a request carries one, their
        /// shape, keys and JWKS, verification, the tokens verified), rate limits (GCRA, alone
        /// and through a fleet's Redis) and client names, streams per client, the admin token,
        /// CORS; the gate a route's requests pass before it serves them.
        .target(
            name: "AccessControl",
            dependencies: [
                "Aggregation", "EventLoop", "HTTPCore", "HTTPServer", "Redis", "TributaryConfiguration", "UpstreamClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // JWT verification: the keys, the parser, the signature checks.
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: serviceSettings
        ),
        /// The replicas of a fleet, met through Redis: each shared live pipeline led by the holder
        /// of its lease and followed by the others, everything written there sealed with the
        /// fleet's secret and checked when read, the control of a stream forwarded to the replica
        /// holding it, reloads spread to every replica. It reaches the service's streams only
        /// through ``LocalStreams``, which the service's stream directory answers.
        .target(
            name: "Fleet",
            dependencies: [
                "Aggregation", "EventLoop", "HTTPCore", "HTTPServer", "Redis", "Rivers", "TributaryConfiguration",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // The seals' HMAC-SHA256 and the digests Redis knows streams by (FleetHashes).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: serviceSettings
        ),
        .target(
            name: "TributaryServer",
            dependencies: [
                "EventLoop", "HTTPCore", "HTTPServer", "UpstreamClient", "Rivers", "Aggregation", "Redis", "Telemetry",
                "TributaryConfiguration", "AccessControl", "Fleet",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The live page's markup, style and script (IndexPage).
            resources: [
                .embedInCode("Operations/LivePage/page.html"), .embedInCode("Operations/LivePage/page.css"),
                .embedInCode("Operations/LivePage/page.js"),
            ],
            swiftSettings: serviceSettings
        ),
        /// The spans' way out: swift-otel's tracer and OTLP/HTTP exporter, set up from `OTEL_*`
        /// and `telemetry.otlp`, running off the workers' loops. Without the `OTLP` trait it is
        /// an empty shell that says so, and swift-otel is not built.
        .target(
            name: "OTLPExport",
            dependencies: [
                "Telemetry",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLP"])),
            ],
            swiftSettings: serviceSettings
        ),
        .executableTarget(
            name: "tributary",
            dependencies: [
                "TributaryServer", "TributaryConfiguration", "UpstreamClient", "OTLPExport", "Telemetry",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: serviceSettings
        ),
        .executableTarget(
            name: "FoundationBench",
            dependencies: ["Aggregation", "EventLoop", "HTTPCore", "HTTPServer", "UpstreamClient"],
            path: "Benchmarks/FoundationBench",
            swiftSettings: strictSettings
        ),
        /// One bearer token's verification per algorithm, cold and cached (Benchmarks/README.md).
        .executableTarget(
            name: "AuthBench",
            dependencies: [
                "AccessControl", "Aggregation", "TributaryConfiguration",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Benchmarks/AuthBench",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "RiversBenchmarks",
            dependencies: ["Rivers", .product(name: "OpenCombine", package: "OpenCombine")],
            path: "Benchmarks/RiversBenchmarks",
            swiftSettings: strictSettings
        ),
        /// One workload of Rivers' operators, run once, for callgrind (Benchmarks/budgets.py).
        .executableTarget(
            name: "RiversCounts",
            dependencies: ["Rivers", .product(name: "OpenCombine", package: "OpenCombine")],
            path: "Benchmarks/RiversCounts",
            swiftSettings: strictSettings
        ),

        // MARK: - Test support and tests

        .target(
            name: "RiversTesting",
            dependencies: ["Rivers", .product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TributaryTesting",
            dependencies: ["Aggregation", "EventLoop", "HTTPCore", "HTTPServer", .product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),
        // A thread of its own for test code that computes for long without suspending (the
        // `.ownThread` trait, `offThePool`): Swift Testing's module, so test targets only.
        .target(name: "TestThreads", swiftSettings: strictSettings),
        .testTarget(
            name: "EventLoopTests",
            dependencies: [
                "EventLoop", "UpstreamClient", "TributaryTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore"], swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: [
                "EventLoop", "HTTPCore", "HTTPServer", "UpstreamClient", "TributaryTesting", "TestThreads",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "UpstreamClientTests",
            dependencies: [
                "EventLoop", "HTTPCore", "UpstreamClient", "TributaryTesting", "TestThreads",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RedisTests",
            dependencies: [
                "Redis", "EventLoop", "TributaryTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AggregationTests",
            dependencies: [
                "Aggregation", "EventLoop", "HTTPCore", "UpstreamClient", "Rivers", "TributaryTesting", "TestThreads",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TributaryServerTests",
            dependencies: [
                "TributaryServer", "TributaryConfiguration", "AccessControl", "Fleet", "Aggregation", "EventLoop", "HTTPCore",
                "HTTPServer", "UpstreamClient", "Redis", "TributaryTesting", "TestThreads",
                // Gzip answers inflated with zlib itself (HTTPSemanticsTests).
                "CZlib",
                // A timer's exposition compared with swift-prometheus's own (SecondsTimerFactoryTests).
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                // deploy/compose.yaml read as Docker Compose reads it (DeployFilesTests).
                .product(name: "Yams", package: "Yams"),
                // Tokens signed in the tests, with keys made in the tests (TestTokens), and
                // tokens whose claims no encoder writes, signed with HMAC (HostileNumbersTests).
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        /// The settings' declarations, ranges and docs table (docs/configuration.md), the YAML reader.
        .testTarget(
            name: "TributaryConfigurationTests",
            dependencies: [
                "TributaryConfiguration", "HTTPCore", "TestThreads",
                // Files made from Swift values, numbers at the ends of each range (SettingRangesTests).
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSettings
        ),
        /// Access control's parts alone: GCRA, the local limiter's bound, clients named by address.
        .testTarget(
            name: "AccessControlTests",
            dependencies: ["AccessControl", "TributaryConfiguration", "TestThreads"],
            swiftSettings: strictSettings
        ),
        /// The fleet's parts without a service: seals and messages, the agent's leases, relay,
        /// reloads and stream lookups between two agents on a real redis-server.
        .testTarget(
            name: "FleetTests",
            dependencies: [
                "Fleet", "Aggregation", "EventLoop", "HTTPServer", "Redis", "TributaryConfiguration", "TributaryTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TributaryTestingTests",
            dependencies: ["HTTPServer", "TributaryTesting", "TestThreads"],
            swiftSettings: strictSettings
        ),
        // MARK: - Fuzzing (scripts/fuzz): the checks, a libFuzzer target each, the corpus replayed

        .target(name: "CFuzzerDriver", path: "Tests/Fuzz/CFuzzerDriver"),
        .target(
            name: "FuzzChecks",
            dependencies: [
                "Aggregation", "CFuzzerDriver", "HTTPCore", "HTTPServer", "UpstreamClient", "TributaryConfiguration", "TributaryServer",
                "TributaryTesting",
            ],
            path: "Tests/Fuzz/FuzzChecks",
            swiftSettings: strictSettings
        ),
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/FuzzJSON", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzConfiguration", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/FuzzConfiguration", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzStreamControl", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/FuzzStreamControl", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzEventStream", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/FuzzEventStream", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzUpstreamResponse", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/FuzzUpstreamResponse",
            swiftSettings: strictSettings),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzChecks"], swiftSettings: strictSettings),
        .testTarget(
            name: "BrowserTests",
            dependencies: ["TributaryTesting"],
            exclude: ["live-page.png"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RiversTests",
            dependencies: [
                "Rivers", "RiversTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
