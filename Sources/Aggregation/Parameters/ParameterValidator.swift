/// Reads a resource's parameter values from what a request gave (its route's segments and
/// query values, or on `GET /events` the parameters prefixed with the resource's name) and
/// checks them against the resource's definitions, before anything is fetched.
///
/// Holds the compiled patterns. Swift's `Regex` is not `Sendable`, so each worker makes its
/// own validator from the (sendable) definitions; it is loop-confined.
///
/// ```swift
/// let validator = try ParameterValidator(definitions)
/// switch validator.values(from: ["team": "core"]) {
/// case .success(let values): …          // team=core, status=open (its default)
/// case .failure(let error): …           // 400 missing_parameter / invalid_parameter
/// }
/// ```
public struct ParameterValidator {
    public let definitions: [ParameterDefinition]
    /// Each definition's compiled pattern, at the same index (nil: none).
    private let patterns: [Regex<AnyRegexOutput>?]
    /// Each pattern's fast path, when it has the usual shape (``AnchoredClassPattern``).
    private let fastPatterns: [AnchoredClassPattern?]
    /// Whether the definitions are declared in ``ParameterValues``' order (by name, as one alone
    /// is): their values are then made in order, with nothing to sort on every request.
    private let declaredByName: Bool

    /// Fails when a pattern is not a regular expression Swift can compile (the configuration
    /// checks every pattern with this as it loads).
    public init(_ definitions: [ParameterDefinition]) throws {
        self.definitions = definitions
        patterns = try definitions.map { definition in try definition.pattern.map { try Regex($0) } }
        fastPatterns = definitions.map { definition in definition.pattern.flatMap(AnchoredClassPattern.init) }
        declaredByName = zip(definitions, definitions.dropFirst()).allSatisfy { ParameterValues.precedes($0.name, $1.name) }
    }

    /// Whether the resource takes no parameters at all.
    public var isEmpty: Bool { definitions.isEmpty }

    /// The values of the declared parameters in `given`, defaults filled in, or why they are
    /// refused; names `given` holds that are not declared are ignored. An empty value counts
    /// as absent.
    public func values(from given: [String: String]) -> Result<ParameterValues, ParameterError> {
        var entries: [ParameterValues.Entry] = []
        entries.reserveCapacity(definitions.count)
        for (index, definition) in definitions.enumerated() {
            let name = definition.name
            guard let value = given[name].flatMap({ $0.isEmpty ? nil : $0 }) ?? definition.defaultValue else {
                if definition.required {
                    return .failure(ParameterError(code: .missingParameter, parameter: name, message: "parameter \(name) is required"))
                }
                continue
            }
            if let problem = problem(with: value, of: definition, at: index) {
                return .failure(ParameterError(code: .invalidParameter, parameter: name, message: "parameter \(name) \(problem)"))
            }
            entries.append(ParameterValues.Entry(name: name, value: value))
        }
        if !declaredByName { entries.sort { ParameterValues.precedes($0.name, $1.name) } }
        return .success(ParameterValues(sorted: entries))
    }

    /// The values `pairs` name (a query's, in order) and nothing more: no default filled in,
    /// no required parameter asked for, as an aimed reload (`POST /groups/reload?team=core`)
    /// names only what it aims at. Each value is checked as ``values(from:)`` checks it; a name
    /// the resource does not declare, a name given twice, or an empty value (it would aim at
    /// no pipeline, or read as "every one") is refused too, `invalid_parameter` naming it.
    public func namedValues(from pairs: [(name: String, value: String)]) -> Result<ParameterValues, ParameterError> {
        // By the declaration each names: a name is matched by its bytes, as a value is.
        var given: [Int: String] = [:]
        for (name, value) in pairs {
            let invalid = { (problem: String) in ParameterError(code: .invalidParameter, parameter: name, message: "parameter \(name) \(problem)") }
            guard let index = definitions.firstIndex(where: { ExactText($0.name) == ExactText(name) }) else {
                let declared = definitions.isEmpty ? "it declares none" : "declared: \(definitions.map(\.name).joined(separator: ", "))"
                return .failure(invalid("is not a parameter of the resource (\(declared))"))
            }
            guard given[index] == nil else { return .failure(invalid("is given more than once")) }
            guard !value.isEmpty else { return .failure(invalid("is empty: give its value, or leave it out for every value")) }
            if let problem = problem(with: value, of: definitions[index], at: index) { return .failure(invalid(problem)) }
            given[index] = value
        }
        return .success(ParameterValues(Dictionary(uniqueKeysWithValues: given.map { (definitions[$0.key].name, $0.value) })))
    }

    /// What is wrong with `value` for `definition`, or nil. The value itself is not repeated
    /// in the message (it may be long, or not text anyone should see echoed).
    private func problem(with value: String, of definition: ParameterDefinition, at index: Int) -> String? {
        if value.utf8.count > ParameterDefinition.maximumValueBytes {
            return "is longer than \(ParameterDefinition.maximumValueBytes) bytes"
        }
        if Self.isDotSegment(value) {
            return "cannot be . or ..: it would move the upstream path"
        }
        // By bytes, as everything shared is keyed: `enum: [café]` takes the bytes it names.
        if let allowed = definition.allowed, !allowed.contains(where: { $0.utf8.elementsEqual(value.utf8) }) {
            return "must be one of \(allowed.joined(separator: ", "))"
        }
        if let pattern = patterns[index], fastPatterns[index]?.accepts(value) != true, (try? pattern.firstMatch(in: value)) == nil {
            return "does not match \(definition.pattern ?? "")"
        }
        return nil
    }

    /// Whether `value` is `.` or `..`, in any parameter: a value may land in a segment of an
    /// upstream path, and percent-encoding leaves dots as they are (they are unreserved), so
    /// such a value would move the path, carrying the service's credentials (`/teams/../groups`).
    /// A value that only holds dots among other bytes (`../x`, `a/./b`) stays one segment: its
    /// `/` is encoded (`..%2Fx`), as the contract's parameter tests require.
    static func isDotSegment(_ value: String) -> Bool {
        let bytes = value.utf8
        return (1...2).contains(bytes.count) && bytes.allSatisfy { $0 == UInt8(ascii: ".") }
    }
}
