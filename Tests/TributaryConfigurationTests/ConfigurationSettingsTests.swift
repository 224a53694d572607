import Foundation
import Testing
@testable import TributaryConfiguration

/// Each setting is declared once (``Settings``), and what people read of it is made from that
/// declaration: docs/configuration.md's tables, `--help`. These tests hold the docs to the
/// declarations and the declarations to the fields they fill.
@Suite("Settings: declared once, documented from the declaration")
struct ConfigurationSettingsTests {
    static let docsURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/configuration.md")

    /// Each generated table of docs/configuration.md, by the name of the comment that opens it.
    static let tables: [(name: String, text: String)] = [
        ("settings", Settings.markdownTable),
        ("settings of kind list", Settings.markdownTable(of: .list)),
        ("settings of kind pages", Settings.markdownTable(of: .pages)),
        ("settings of kind search", Settings.markdownTable(of: .search)),
        ("ranges", Settings.rangesTable),
    ]

    /// The docs with each table between `<!-- generated: NAME -->` and `<!-- end -->` as declared.
    static func regenerated(_ docs: String) throws -> String {
        var docs = docs
        for (name, text) in tables {
            let start = "<!-- generated: \(name) -->\n"
            let begin = try #require(docs.range(of: start), "docs/configuration.md has no \(start)")
            let end = try #require(docs.range(of: "\n<!-- end -->", range: begin.upperBound..<docs.endIndex))
            docs.replaceSubrange(begin.upperBound..<end.lowerBound, with: text)
        }
        return docs
    }

    @Test("docs/configuration.md holds every table as the settings declare it (TRIBUTARY_UPDATE_DOCS=1 rewrites them)")
    func documented() throws {
        let docs = try String(contentsOf: Self.docsURL, encoding: .utf8)
        let expected = try Self.regenerated(docs)
        if ProcessInfo.processInfo.environment["TRIBUTARY_UPDATE_DOCS"] == "1", expected != docs {
            try expected.write(to: Self.docsURL, atomically: true, encoding: .utf8)
            return
        }
        for (name, text) in Self.tables {
            #expect(docs.contains("<!-- generated: \(name) -->\n\(text)\n<!-- end -->"), "docs/configuration.md, table \(name), should be:\n\(text)")
        }
    }

    /// The stored properties of `value`'s type.
    static func fieldNames(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label))
    }

    @Test("every field of the fixed sections is a declared key, and every declared key of them a field")
    func fieldsDeclared() {
        let sections: [(prefix: String, fields: Set<String>)] = [
            ("server", Self.fieldNames(of: Configuration.Server())),
            ("sse", Self.fieldNames(of: Configuration.EventStreams())),
            ("cluster", Self.fieldNames(of: Configuration.Cluster.defaults)),
            ("auth", Self.fieldNames(of: Configuration.Auth())),
            ("auth.jwt", Self.fieldNames(of: Configuration.JWTSettings())),
            ("telemetry", Self.fieldNames(of: Configuration.Telemetry())),
            ("telemetry.otlp", Self.fieldNames(of: Configuration.OTLPSettings())),
        ]
        for (prefix, fields) in sections {
            #expect(Settings.keys(under: prefix, kind: nil) == fields, "\(prefix)")
        }
    }

    @Test("no key is declared twice for one kind of resource, and every key has a meaning")
    func declaredOnce() {
        for kind in [nil] + ResourceKind.allCases.map(Optional.some) {
            let keys = Settings.all.filter { setting in kind == nil ? setting.kinds == nil : setting.kinds?.contains(kind!) == true }.map(\.key)
            #expect(Set(keys).count == keys.count, "\(kind.map(\.rawValue) ?? "every kind"): \(keys)")
        }
        for setting in Settings.all {
            #expect(!setting.meaning.isEmpty && !setting.meaning.contains("|"), "\(setting.key)")
        }
    }

    @Test("a reload keeps exactly the settings declared restart-only, and names them")
    func restartOnly() throws {
        #expect(Configuration.restartOnlySettings.map(\.key) == [
            "server.listen", "server.workers", "server.logLevel", "server.logFormat", "server.requestTimeout", "server.maxHeaderBytes", "server.maxBodyBytes",
            "server.maxConnections", "server.shutdownTimeout", "server.maxIdentities", "server.maxRateLimitBuckets", "sse", "cluster",
            "auth.jwt", "telemetry",
        ])
        let live = Settings.all.filter { $0.key.hasPrefix("server.") && $0.reload == .live }.map(\.key)
        #expect(live.contains("server.maxStreamsPerClient") && live.contains("server.adminToken") && !live.contains("server.listen"))
    }

    @Test("--help of an option that sets a setting says what it means, its variable and its key")
    func help() {
        let listen = Configuration.help(option: "--listen")
        #expect(listen.text == "Where to listen ([::1]:8080 for IPv6) (env TRIBUTARY_LISTEN; config server.listen).")
        #expect(listen.valueName == "HOST:PORT")
        #expect(Configuration.help(option: "--upstream").text.hasSuffix("(env TRIBUTARY_UPSTREAM_<NAME>; config upstreams.<name>.url)."))
        #expect(Configuration.help(option: "--log-level").text.hasPrefix("trace, debug,"))
        #expect(Configuration.help(option: "--log-format").text.hasSuffix("(env TRIBUTARY_LOG_FORMAT; config server.logFormat)."))
    }

    @Test("the environment and the command line are read as the file is, and a bad value names the variable or the option")
    func overridesNamed() {
        func problem(_ environment: [String: String], _ overrides: Configuration.Overrides = .init()) -> String? {
            do {
                _ = try Configuration.load(yaml: "", file: "t.yaml", environment: environment, overrides: overrides)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(problem(["TRIBUTARY_LOG_LEVEL": "loud"])?.hasPrefix("TRIBUTARY_LOG_LEVEL: expected one of critical, debug") == true)
        #expect(problem([:], .init(logLevel: "loud"))?.hasPrefix("--log-level: expected one of critical, debug") == true)
        #expect(problem(["TRIBUTARY_LOG_FORMAT": "JSON"]) == #"TRIBUTARY_LOG_FORMAT: expected text or json, found "JSON""#)
        #expect(problem([:], .init(logFormat: "logfmt")) == #"--log-format: expected text or json, found "logfmt""#)
        #expect((try? Configuration.load(yaml: "server: {logFormat: json}", file: "t.yaml"))?.server.logFormat == .json)
        let overridden = try? Configuration.load(
            yaml: "", file: "t.yaml", environment: ["TRIBUTARY_LOG_FORMAT": "json"], overrides: .init(logFormat: "text"))
        #expect(overridden?.server.logFormat == .text, "the option over the variable")
        #expect(problem(["TRIBUTARY_TRUSTED_PROXIES": "10.0.0.0/8, nope"])?.hasPrefix("TRIBUTARY_TRUSTED_PROXIES: expected addresses or CIDR blocks") == true)
        let configuration = try? Configuration.load(
            yaml: "server: {adminToken: file, corsOrigins: [a]}", file: "t.yaml",
            environment: ["TRIBUTARY_ADMIN_TOKEN": "", "TRIBUTARY_CORS_ORIGINS": " https://a.example , ,https://b.example",
                          "TRIBUTARY_TRUSTED_PROXIES": "10.0.0.0/8,::1"])
        #expect(configuration?.server.adminToken == nil, "an empty token is none")
        #expect(configuration?.server.corsOrigins == ["https://a.example", "https://b.example"])
        #expect(configuration?.server.trustedProxies.count == 2)
    }
}
