/// One parameter a resource takes from its client (`resources.NAME.parameters.<name>`): from
/// a segment of its route (`route: /teams/{team}/groups`) or from the query string
/// (`in: query`), checked against a `pattern` and an `enum`, with a `default`, and `required`
/// (by default a path parameter is, a query parameter is not).
///
/// ```yaml
/// parameters:
///   team: {pattern: "^[a-z0-9-]{1,40}$"}
///   status: {in: query, enum: [open, done], default: open}
/// ```
public struct ParameterDefinition: Sendable, Equatable {
    public enum Location: String, Sendable, CaseIterable {
        case path
        case query
    }

    public var name: String
    public var location: Location
    /// A regular expression the value must contain a match of (anchor it with `^…$` to
    /// match it whole), as Swift's `Regex` reads it.
    public var pattern: String?
    /// The only values allowed (`enum`), when given.
    public var allowed: [String]?
    /// The value when the request gives none (an empty query value counts as none).
    public var defaultValue: String?
    public var required: Bool

    /// The longest value any parameter takes: it goes into upstream paths and keys, and a
    /// client must not make those as long as it likes.
    public static let maximumValueBytes = 1024

    public init(
        name: String, location: Location, pattern: String? = nil, allowed: [String]? = nil, defaultValue: String? = nil,
        required: Bool? = nil
    ) {
        self.name = name
        self.location = location
        self.pattern = pattern
        self.allowed = allowed
        self.defaultValue = defaultValue
        self.required = required ?? (location == .path)
    }
}

/// Why a request's parameters were refused, before any upstream call: `missing_parameter` or
/// `invalid_parameter`, naming the parameter (a 400 answer).
public struct ParameterError: Error, Equatable, Sendable {
    public enum Code: String, Sendable {
        case missingParameter = "missing_parameter"
        case invalidParameter = "invalid_parameter"
    }

    public let code: Code
    /// The parameter, as the resource declares it.
    public let parameter: String
    public let message: String
}
