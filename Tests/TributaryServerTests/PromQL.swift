/// The metric names a PromQL expression selects, read the way Prometheus reads them: an
/// identifier is a metric name unless it calls a function (`rate(`), names labels (`by (route)`,
/// `{status=~"5.."}`), is a keyword (`bool`, `and`, `offset`) or sits in a range (`[5m]`);
/// strings, numbers and Grafana's variables (`$__rate_interval`, `${job}`) are skipped.
///
///     PromQL.metricNames(in: #"sum by (route) (rate(tributary_http_requests_total{status="200"}[$__rate_interval]))"#)
///     // ["tributary_http_requests_total"]
///
/// Why not a regular expression over `tributary_`: the dashboard's check must fail on a metric
/// that is misspelled or named otherwise, not only on one that has the prefix.
enum PromQL {
    /// Keywords that take a parenthesised list of label names.
    private static let labelListKeywords: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right"]
    /// Keywords and operators spelled as words.
    private static let keywords: Set<String> = ["and", "or", "unless", "bool", "offset", "atan2", "start", "end", "inf", "nan"]

    static func metricNames(in expression: String) -> Set<String> {
        let characters = Array(expression.unicodeScalars)
        var names: Set<String> = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "\"", "'", "`":
                index = skipString(characters, from: index)
            case "{":
                index = skipGroup(characters, from: index, open: "{", close: "}")
            case "[":
                index = skipGroup(characters, from: index, open: "[", close: "]")
            case "$":
                index = skipVariable(characters, from: index)
            case "0"..."9", ".":
                // A number or a duration (`0.95`, `5m`, `1e3`).
                index += 1
                while index < characters.count, isIdentifierCharacter(characters[index]) || characters[index] == "." {
                    index += 1
                }
            default:
                guard isIdentifierStart(character) else {
                    index += 1
                    continue
                }
                let start = index
                while index < characters.count, isIdentifierCharacter(characters[index]) {
                    index += 1
                }
                let word = String(String.UnicodeScalarView(characters[start..<index]))
                let next = nextNonSpace(characters, from: index)
                if labelListKeywords.contains(word.lowercased()) {
                    if next < characters.count, characters[next] == "(" {
                        index = skipGroup(characters, from: next, open: "(", close: ")")
                    }
                } else if next < characters.count, characters[next] == "(" || startsModifier(characters, at: next) {
                    continue  // a function, or an aggregation (`sum(…)`, `sum by (…) (…)`)
                } else if !keywords.contains(word.lowercased()) {
                    names.insert(word)
                }
            }
        }
        return names
    }

    /// Whether `by` or `without` starts at `index`: what follows an aggregation's name when it
    /// comes before the aggregated expression.
    private static func startsModifier(_ characters: [Unicode.Scalar], at index: Int) -> Bool {
        var end = index
        while end < characters.count, isIdentifierCharacter(characters[end]) {
            end += 1
        }
        let word = String(String.UnicodeScalarView(characters[index..<end])).lowercased()
        return word == "by" || word == "without"
    }

    private static func isIdentifierStart(_ character: Unicode.Scalar) -> Bool {
        character == "_" || character == ":" || ("a"..."z").contains(character) || ("A"..."Z").contains(character)
    }

    private static func isIdentifierCharacter(_ character: Unicode.Scalar) -> Bool {
        isIdentifierStart(character) || ("0"..."9").contains(character)
    }

    private static func nextNonSpace(_ characters: [Unicode.Scalar], from index: Int) -> Int {
        var index = index
        while index < characters.count, characters[index].properties.isWhitespace {
            index += 1
        }
        return index
    }

    /// The index after the string that starts at `index` (backslash escapes honoured).
    private static func skipString(_ characters: [Unicode.Scalar], from index: Int) -> Int {
        let quote = characters[index]
        var index = index + 1
        while index < characters.count, characters[index] != quote {
            index += characters[index] == "\\" && quote != "`" ? 2 : 1
        }
        return index + 1
    }

    /// The index after the group that opens at `index`, strings and nested groups inside it skipped.
    private static func skipGroup(_ characters: [Unicode.Scalar], from index: Int, open: Unicode.Scalar, close: Unicode.Scalar) -> Int {
        var depth = 0
        var index = index
        while index < characters.count {
            switch characters[index] {
            case "\"", "'", "`":
                index = skipString(characters, from: index)
                continue
            case open:
                depth += 1
            case close:
                depth -= 1
                if depth == 0 { return index + 1 }
            default:
                break
            }
            index += 1
        }
        return index
    }

    /// The index after a Grafana variable: `$name`, `$__name` or `${name}` (`${name:format}`).
    private static func skipVariable(_ characters: [Unicode.Scalar], from index: Int) -> Int {
        let next = index + 1
        if next < characters.count, characters[next] == "{" {
            return skipGroup(characters, from: next, open: "{", close: "}")
        }
        var end = next
        while end < characters.count, isIdentifierCharacter(characters[end]) {
            end += 1
        }
        return end
    }
}
