import Testing
@testable import TributaryConfiguration

@Suite("YAML section: the configuration file read key by key, every problem naming its key path")
struct YAMLSectionTests {
    /// The mapping at `path` (dot-separated) of `yaml`, as read from `t.yaml`.
    static func section(_ yaml: String, at path: String = "") throws(ConfigurationError) -> YAMLSection {
        var section = try YAMLSection.root(yaml: yaml, file: "t.yaml")
        for key in path.split(separator: ".") { section = try section.requiredSection(String(key)) }
        return section
    }

    /// What `read` threw, or nil.
    static func problem<Value>(_ read: () throws(ConfigurationError) -> Value) -> ConfigurationError? {
        do {
            _ = try read()
            return nil
        } catch {
            return error
        }
    }

    // MARK: - The file

    @Test("an empty file, or one of comments only, is an empty mapping at the top")
    func emptyFile() throws {
        for yaml in ["", "# nothing\n", "\n\n"] {
            let root = try YAMLSection.root(yaml: yaml, file: "t.yaml")
            #expect(root.mapping.count == 0, "\(yaml)")
            #expect(root.path == "")
            #expect(try root.string("anything") == nil)
        }
    }

    @Test("text that is not YAML, or a top level that is not a mapping, fails naming the file")
    func notAMapping() {
        let broken = Self.problem { () throws(ConfigurationError) in try YAMLSection.root(yaml: "server: [unclosed", file: "t.yaml") }
        #expect(broken?.location == "t.yaml")
        #expect(broken?.problem.hasPrefix("not valid YAML: ") == true)
        for yaml in ["- a\n- b\n", "just text", "42"] {
            let problem = Self.problem { () throws(ConfigurationError) in try YAMLSection.root(yaml: yaml, file: "t.yaml") }
            #expect(problem == ConfigurationError("t.yaml", "the top level must be a mapping of keys"), "\(yaml)")
        }
    }

    @Test("a key is located by the file and its whole path from the top")
    func location() throws {
        let root = try Self.section("a: {b: {c: x}}")
        #expect(root.location("a") == "t.yaml: a")
        let inner = try Self.section("a: {b: {c: x}}", at: "a.b")
        #expect(inner.path == "a.b")
        #expect(inner.location("c") == "t.yaml: a.b.c")
    }

    // MARK: - Values

    @Test("string is the value as written, whatever YAML would make of it, and nil when the key is absent")
    func string() throws {
        let section = try Self.section(#"{name: tasks, number: 42, quoted: "42", flag: true, spaced: " a b ", url: "http://x:1/p?q=1"}"#)
        #expect(try section.string("name") == "tasks")
        #expect(try section.string("number") == "42")
        #expect(try section.string("quoted") == "42")
        #expect(try section.string("flag") == "true")
        #expect(try section.string("spaced") == " a b ")
        #expect(try section.string("url") == "http://x:1/p?q=1")
        #expect(try section.string("absent") == nil)
    }

    @Test("a key with no value reads as the empty string, which requiredString refuses as required")
    func emptyValue() throws {
        let section = try Self.section("outer:\n  empty:\n  quoted: \"\"\n", at: "outer")
        #expect(try section.string("empty") == "")
        #expect(try section.string("quoted") == "")
        for key in ["empty", "quoted", "absent"] {
            #expect(Self.problem { () throws(ConfigurationError) in try section.requiredString(key) }
                == ConfigurationError("t.yaml: outer.\(key)", "required"))
        }
    }

    @Test("a list or a mapping where a single value belongs fails naming the key")
    func singleValueExpected() throws {
        let section = try Self.section("outer: {list: [a, b], map: {a: b}}", at: "outer")
        for key in ["list", "map"] {
            let expected = ConfigurationError("t.yaml: outer.\(key)", "expected a single value")
            #expect(Self.problem { () throws(ConfigurationError) in try section.string(key) } == expected)
            #expect(Self.problem { () throws(ConfigurationError) in try section.requiredString(key) } == expected)
            #expect(Self.problem { () throws(ConfigurationError) in try section.integer(key, in: 0...1) } == expected)
            #expect(Self.problem { () throws(ConfigurationError) in try section.boolean(key) } == expected)
            #expect(Self.problem { () throws(ConfigurationError) in try section.duration(key, in: .zero ... .seconds(1)) } == expected)
        }
    }

    @Test("strings reads a flow or block list, and one value as a list of one; nil when absent")
    func strings() throws {
        let section = try Self.section("""
            flow: [a, "b c", 3]
            block:
              - x
              - y
            single: alone
            none: []
            """)
        #expect(try section.strings("flow") == ["a", "b c", "3"])
        #expect(try section.strings("block") == ["x", "y"])
        #expect(try section.strings("single") == ["alone"])
        #expect(try section.strings("none") == [])
        #expect(try section.strings("absent") == nil)
    }

    @Test("strings refuses a mapping, or a list holding a list or a mapping, naming the key")
    func stringsOfValuesOnly() throws {
        let section = try Self.section("outer: {map: {a: b}, nested: [a, [b]], mapped: [{a: b}]}", at: "outer")
        for key in ["map", "nested", "mapped"] {
            #expect(Self.problem { () throws(ConfigurationError) in try section.strings(key) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected a list of values"))
        }
    }

    @Test("integer reads a whole number within its range; anything else fails naming the range and what was found")
    func integer() throws {
        let section = try Self.section(#"outer: {five: 5, zero: 0, negative: -1, plus: +7, quoted: "12", many: many, half: 1.5, hex: 0x10, huge: 99999999999999999999}"#,
                                       at: "outer")
        #expect(try section.integer("five", in: 1...5) == 5)
        #expect(try section.integer("zero", in: 0...0) == 0)
        #expect(try section.integer("negative", in: -1...0) == -1)
        #expect(try section.integer("plus", in: 0...10) == 7)
        #expect(try section.integer("quoted", in: 0...100) == 12)
        #expect(try section.integer("absent", in: 1...1) == nil)
        let refused = [("zero", 1...9, "0"), ("negative", 0...9, "-1"), ("five", 0...4, "5"), ("many", 0...9, "many"), ("half", 0...9, "1.5"),
                       ("hex", 0...99, "0x10"), ("huge", 0...Int.max, "99999999999999999999")]
        for (key, range, found) in refused {
            #expect(Self.problem { () throws(ConfigurationError) in try section.integer(key, in: range) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected a whole number from \(range.lowerBound) to \(range.upperBound), found \"\(found)\""))
        }
    }

    @Test("boolean reads exactly true or false; yes, True, 1 and the rest fail naming what was found")
    func boolean() throws {
        let section = try Self.section(#"outer: {yes: true, no: false, word: yes, capital: True, one: 1, quoted: "true"}"#, at: "outer")
        #expect(try section.boolean("yes") == true)
        #expect(try section.boolean("no") == false)
        #expect(try section.boolean("quoted") == true)
        #expect(try section.boolean("absent") == nil)
        for (key, found) in [("word", "yes"), ("capital", "True"), ("one", "1")] {
            #expect(Self.problem { () throws(ConfigurationError) in try section.boolean(key) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected true or false, found \"\(found)\""))
        }
    }

    @Test("duration reads a number and a unit, ms, s, m or h, within its range (never past a year); anything else fails with examples, the range and what was found")
    func duration() throws {
        let section = try Self.section("""
            outer:
              millis: 250ms
              seconds: 5s
              fraction: 1.5s
              minutes: 2m
              hours: 1h
              zero: 0s
              year: 8784h
              bare: 5
              days: 2d
              negative: -1s
              overAYear: 8785h
              words: soon
            """, at: "outer")
        #expect(try section.duration("millis", in: Self.anyDuration) == .milliseconds(250))
        #expect(try section.duration("seconds", in: Self.anyDuration) == .seconds(5))
        #expect(try section.duration("fraction", in: Self.anyDuration) == .milliseconds(1500))
        #expect(try section.duration("minutes", in: Self.anyDuration) == .seconds(120))
        #expect(try section.duration("hours", in: Self.anyDuration) == .seconds(3600))
        #expect(try section.duration("zero", in: Self.anyDuration) == .zero)
        #expect(try section.duration("year", in: Self.anyDuration) == .seconds(366 * 24 * 3600))
        #expect(try section.duration("absent", in: Self.anyDuration) == nil)
        for (key, found) in [("bare", "5"), ("days", "2d"), ("negative", "-1s"), ("overAYear", "8785h"), ("words", "soon")] {
            #expect(Self.problem { () throws(ConfigurationError) in try section.duration(key, in: Self.anyDuration) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected a duration such as 250ms, 5s or 1m from 0s to 8784h, found \"\(found)\""))
        }
        let outside: [(key: String, range: ClosedRange<Duration>, said: String)] = [
            ("millis", .seconds(1) ... .seconds(2), "from 1s to 2s, found \"250ms\""),
            ("hours", .zero ... .seconds(60), "from 0s to 1m, found \"1h\""),
        ]
        for (key, range, said) in outside {
            #expect(Self.problem { () throws(ConfigurationError) in try section.duration(key, in: range) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected a duration such as 250ms, 5s or 1m \(said)"))
        }
    }

    /// Every duration a file can write.
    static let anyDuration = Duration.zero ... .seconds(366 * 24 * 3600)

    // MARK: - Sections

    @Test("section reads a mapping under its key's path; another value fails as not a mapping; absent is nil")
    func section() throws {
        let outer = try Self.section("outer: {inner: {key: value}, list: [a], single: x, empty: {}}", at: "outer")
        let inner = try #require(try outer.section("inner"))
        #expect(inner.path == "outer.inner")
        #expect(try inner.string("key") == "value")
        #expect(try outer.section("empty")?.mapping.count == 0)
        #expect(try outer.section("absent") == nil)
        for key in ["list", "single"] {
            #expect(Self.problem { () throws(ConfigurationError) in try outer.section(key) }
                == ConfigurationError("t.yaml: outer.\(key)", "expected a mapping of keys"))
        }
    }

    @Test("requiredSection fails required when the key is absent, naming its path")
    func requiredSection() throws {
        let outer = try Self.section("outer: {inner: {}}", at: "outer")
        #expect(try outer.requiredSection("inner").path == "outer.inner")
        #expect(Self.problem { () throws(ConfigurationError) in try outer.requiredSection("details") }
            == ConfigurationError("t.yaml: outer.details", "required"))
    }

    @Test("allowOnly accepts the known keys and fails on the first other, naming it and the keys known there, sorted")
    func allowOnly() throws {
        let section = try Self.section("outer: {url: x, timeout: 1s, timout: 2s}", at: "outer")
        #expect(Self.problem { () throws(ConfigurationError) in try section.allowOnly(["url", "timeout", "timout"]) } == nil)
        #expect(Self.problem { () throws(ConfigurationError) in try section.allowOnly(["url", "timeout", "retries"]) }
            == ConfigurationError("t.yaml: outer.timout", "unknown key (known here: retries, timeout, url)"))
        #expect(Self.problem { () throws(ConfigurationError) in try Self.section("").allowOnly([]) } == nil, "an empty mapping has no unknown key")
    }

    @Test("namedSections lists every entry of a mapping of sections in file order, each under its own path")
    func namedSections() throws {
        let upstreams = try Self.section("""
            upstreams:
              tasks: {url: a}
              media: {url: b}
              42: {url: c}
              "7": {url: d}
              search: {}
            """, at: "upstreams")
        let entries = try upstreams.namedSections()
        #expect(entries.map(\.name) == ["tasks", "media", "42", "7", "search"])
        #expect(entries.map(\.section.path) == ["upstreams.tasks", "upstreams.media", "upstreams.42", "upstreams.7", "upstreams.search"])
        #expect(try entries.map { try $0.section.string("url") } == ["a", "b", "c", "d", nil])
    }

    @Test("namedSections refuses two entries of one name, which YAML tells apart by quotes, naming it")
    func namedSectionsNamedOnce() throws {
        let upstreams = try Self.section(#"upstreams: {42: {url: a}, "42": {url: b}}"#, at: "upstreams")
        #expect(Self.problem { () throws(ConfigurationError) in try upstreams.namedSections() }
            == ConfigurationError("t.yaml: upstreams.42", "named twice"))
    }

    @Test("namedSections fails on an entry that is not a mapping, naming it")
    func namedSectionsOfMappingsOnly() throws {
        let resources = try Self.section("resources: {groups: {kind: list}, rows: pages}", at: "resources")
        #expect(Self.problem { () throws(ConfigurationError) in try resources.namedSections() }
            == ConfigurationError("t.yaml: resources.rows", "expected a mapping of keys"))
    }
}
