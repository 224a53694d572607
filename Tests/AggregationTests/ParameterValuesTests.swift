import Aggregation
import Testing

/// What an aimed reload (`POST /groups/reload?team=core`) reads and matches: the values it
/// names, checked as a `GET`'s and nothing filled in, and which pipelines' values hold them.
@Suite("Parameter values: naming some, and holding them")
struct ParameterValuesTests {
    /// A validator holds compiled patterns, which are not `Sendable`: one per test.
    static var validator: ParameterValidator {
        try! ParameterValidator([
            ParameterDefinition(name: "status", location: .query, allowed: ["open", "done"], defaultValue: "open"),
            ParameterDefinition(name: "team", location: .path, pattern: "^[^A-Z]{1,40}$"),
        ])
    }

    @Test("values hold those given, each byte for byte, whatever their others; every value holds none")
    func holds() {
        let pipeline = ParameterValues(["team": "core", "status": "open"])
        #expect(pipeline.holds(.none))
        #expect(pipeline.holds(ParameterValues(["team": "core"])))
        #expect(pipeline.holds(ParameterValues(["status": "open", "team": "core"])))
        #expect(!pipeline.holds(ParameterValues(["team": "web"])))
        #expect(!pipeline.holds(ParameterValues(["team": "core", "status": "done"])))
        #expect(!pipeline.holds(ParameterValues(["tag": "core"])))
        #expect(!ParameterValues.none.holds(ParameterValues(["team": "core"])))
        #expect(ParameterValues(["team": "K"]).holds(ParameterValues(["team": "K"])))
        #expect(!ParameterValues(["team": "K"]).holds(ParameterValues(["team": "\u{212A}"])), "the Kelvin sign is another value")
        #expect(!ParameterValues(["team": "\u{E9}"]).holds(ParameterValues(["team": "e\u{301}"])))
    }

    @Test("named values are those given, checked as a GET's: no default filled in, no required one asked for")
    func namedValues() throws {
        let validator = Self.validator
        #expect(try validator.namedValues(from: []).get() == .none)
        #expect(try validator.namedValues(from: [("status", "done")]).get() == ParameterValues(["status": "done"]))
        #expect(try validator.namedValues(from: [("team", "core")]).get() == ParameterValues(["team": "core"]), "no status: not its default")
        #expect(try validator.namedValues(from: [("team", "\u{212A}")]).get() == ParameterValues(["team": "\u{212A}"]))
    }

    @Test("an undeclared name, one given twice, an empty value or one a GET refuses: invalid_parameter naming it")
    func refusals() {
        let validator = Self.validator
        for (pairs, parameter) in [
            ([("tag", "x")], "tag"), ([("Team", "core")], "Team"), ([("team", "a"), ("team", "b")], "team"),
            ([("team", "a"), ("team", "a")], "team"), ([("team", "")], "team"), ([("team", ".")], "team"),
            ([("team", "..")], "team"), ([("team", "Core")], "team"), ([("status", "closed")], "status"),
            ([("team", String(repeating: "a", count: ParameterDefinition.maximumValueBytes + 1))], "team"),
            ([("team", "core"), ("status", "")], "status"),
        ] as [([(name: String, value: String)], String)] {
            guard case .failure(let error) = validator.namedValues(from: pairs) else {
                Issue.record("accepted: \(pairs)")
                continue
            }
            #expect(error.code == .invalidParameter, "\(pairs)")
            #expect(error.parameter == parameter, "\(pairs)")
            #expect(error.message.hasPrefix("parameter \(parameter) "), "\(error.message)")
        }
    }
}
