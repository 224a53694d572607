import Foundation
import Testing
import TestThreads
@testable import TributaryConfiguration
import Yams

/// Every numeric setting has a range (declared in ``Settings``), and nothing outside it gets in:
/// each key in turn, at both ends and one past each, and at the numbers that once trapped
/// the process or would (2^63, 2^64, 1e308, inf, NaN), is refused naming that key.
@Suite("Setting ranges: every numeric key refused outside its range, named")
struct SettingRangesTests {
    /// A configuration with every section a numeric key lives in (never mutated: a constant
    /// Yams takes as `Any`).
    nonisolated(unsafe) static let base: [String: Any] = [
        "server": ["workers": "1", "rateLimit": ["rate": "20/s"]],
        "sse": [String: Any](),
        "cluster": ["redis": "redis://127.0.0.1:6379", "secret": "0123456789abcdef0123456789abcdef"],
        "auth": ["jwt": ["keys": [["kid": "k", "alg": "HS256", "secret": "0123456789abcdef0123456789abcdef"]]]],
        "upstreams": ["tasks": ["url": "http://127.0.0.1:9", "circuitBreaker": [String: Any]()]],
        "resources": [
            "groups": [
                "kind": "list", "upstream": "tasks", "list": ["path": "/groups"], "rateLimit": ["rate": "20/s"],
                "details": ["path": "/groups/{id}/metadata", "batch": ["path": "/groups/metadata"]],
            ],
            "search": ["kind": "search", "upstream": "tasks", "path": "/search"],
        ],
    ]

    /// Every key with a range, once (a key of two kinds of resource has one range).
    static let numeric: [Setting] = Settings.all.filter { $0.bounds != nil }.reduce(into: []) { keys, setting in
        if !keys.contains(where: { $0.key == setting.key }) { keys.append(setting) }
    }

    /// The key path in ``base`` that `pattern` names: its upstream, or the resource of the
    /// kind that takes the key.
    static func concrete(_ pattern: String) -> String {
        let kinds = numeric.first { $0.key == pattern }?.kinds ?? [.list]
        let resource = kinds.contains(.list) ? "groups" : "search"
        return pattern.replacing("upstreams.*", with: "upstreams.tasks").replacing("resources.*", with: "resources.\(resource)")
    }

    /// ``base`` with `value` at `path`, as YAML.
    static func yaml(setting path: String, to value: String) throws -> String {
        func set(_ keys: ArraySlice<Substring>, in mapping: [String: Any]) -> [String: Any] {
            var mapping = mapping
            let key = String(keys.first!)
            if keys.count == 1 {
                mapping[key] = value
            } else {
                mapping[key] = set(keys.dropFirst(), in: mapping[key] as? [String: Any] ?? [:])
            }
            return mapping
        }
        return try Yams.dump(object: set(path.split(separator: ".")[...], in: base))
    }

    static func problem(_ yaml: String) -> String? {
        do {
            _ = try Configuration.load(yaml: yaml, file: "t.yaml")
            return nil
        } catch {
            return error.description
        }
    }

    /// Numbers no key takes, however it is written.
    static let hostile = ["-1", "9007199254740992", "9223372036854775808", "18446744073709551616", "1e308", ".inf", "inf", "-inf",
                          ".nan", "nan", "text", ""]

    /// What a key of `bounds` accepts (both ends) and refuses (one past each end, and the
    /// hostile numbers in its own notation).
    static func values(_ bounds: Setting.Bounds) -> (accepted: [String], refused: [String]) {
        switch bounds {
        case .whole(let range):
            return ([String(range.lowerBound), String(range.upperBound)],
                    [String(range.lowerBound - 1), String(range.upperBound + 1)] + hostile)
        case .duration(let range):
            let (low, high) = (range.lowerBound.wholeMilliseconds, range.upperBound.wholeMilliseconds)
            return ([ConfigDuration.text(range.lowerBound), ConfigDuration.text(range.upperBound)],
                    (low > 0 ? ["\(low - 1)ms"] : []) + ["\(high + 1)ms", "5"] + hostile.filter { !$0.isEmpty }.map { $0 + "s" })
        case .rate(let range):
            return ([Setting.rateText(range.lowerBound), Setting.rateText(range.upperBound)],
                    ["\(range.lowerBound * 3600 / 2)/h", "\(Int(range.upperBound) + 1)/s", "0/s", "20"]
                        + hostile.filter { !$0.isEmpty }.map { $0 + "/s" })
        }
    }

    @Test("the base configuration loads", arguments: [0])
    func baseLoads(_: Int) throws {
        #expect(Self.problem(try Yams.dump(object: Self.base)) == nil)
    }

    @Test("each key takes both ends of its range and refuses one past each, 2^53, 2^63, 2^64, 1e308, inf, nan, −1 and text",
          .ownThread, arguments: numeric.map(\.key))
    func everyKey(_ pattern: String) throws {
        let bounds = try #require(Settings.bounds(of: pattern))
        let path = Self.concrete(pattern)
        let (accepted, refused) = Self.values(bounds)
        for value in accepted {
            #expect(Self.problem(try Self.yaml(setting: path, to: value)) == nil, "\(path): \(value)")
        }
        for value in refused {
            let problem = Self.problem(try Self.yaml(setting: path, to: value))
            #expect(problem?.hasPrefix("t.yaml: \(path): expected ") == true, "\(path): \(value) → \(problem ?? "accepted")")
            #expect(problem?.contains(Setting.describe(bounds)) == true, "\(path): \(value) → \(problem ?? "accepted")")
        }
    }

    @Test("the environment and the command line are held to the same range as the file")
    func overridesInRange() {
        for (value, accepted) in [("0", false), ("257", false), ("18446744073709551616", false), ("auto", true), ("256", true)] {
            let refused: String?
            do {
                _ = try Configuration.load(yaml: "", file: "t.yaml", environment: ["TRIBUTARY_WORKERS": value])
                refused = nil
            } catch {
                refused = error.description
            }
            #expect((refused == nil) == accepted, "TRIBUTARY_WORKERS=\(value): \(refused ?? "accepted")")
            if !accepted { #expect(refused?.hasPrefix("TRIBUTARY_WORKERS: expected a whole number from 1 to 256") == true) }
        }
        for workers in [0, -1, 257, Int.max] {
            #expect(throws: ConfigurationError.self, "--workers \(workers)") {
                _ = try Configuration.load(yaml: "", file: "t.yaml", overrides: .init(workers: workers))
            }
        }
    }
}

/// Settings that are valid but let more through than an operator likely meant: each said as a
/// warning at start (``Configuration/cautions``).
@Suite("Cautions at start: a JWT configuration without issuer or audience, keys over plain HTTP")
struct ConfigurationCautionsTests {
    static func cautions(_ jwt: String) throws -> [String] {
        let yaml = "auth:\n  jwt: \(jwt)\n"
        return try Configuration.load(yaml: yaml, file: "t.yaml").cautions.map(\.key)
    }

    @Test("each missing check and a JWKS over http:// to another host is named; a complete one over https, or on loopback, is quiet")
    func named() throws {
        let key = #"keys: [{kid: k, alg: HS256, secret: "0123456789abcdef0123456789abcdef"}]"#
        #expect(try Self.cautions("{\(key)}") == ["auth.jwt.issuer", "auth.jwt.audience"])
        #expect(try Self.cautions("{issuer: i, \(key)}") == ["auth.jwt.audience"])
        #expect(try Self.cautions("{issuer: i, audience: a, jwks: http://keys.example.test/jwks.json}") == ["auth.jwt.jwks"])
        #expect(try Self.cautions("{issuer: i, audience: a, jwks: https://keys.example.test/jwks.json}") == [])
        #expect(try Self.cautions("{issuer: i, audience: a, jwks: http://127.0.0.1:9/jwks.json}") == [])
        #expect(try Configuration.load(yaml: "", file: "t.yaml").cautions.isEmpty)
    }
}
