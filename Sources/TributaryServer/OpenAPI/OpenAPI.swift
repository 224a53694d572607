import Aggregation

/// The few parts of an OpenAPI 3.1 document (<https://spec.openapis.org/oas/v3.1.0>) that
/// ``OpenAPIDocument`` puts together, each written as ``JSON`` with its fields in the order the
/// specification lists them. Schemas stay plain ``JSON``: they are JSON Schema 2020-12 as is.
enum OpenAPI {
    /// One method on one path.
    struct Operation {
        /// `get`, `post`, `put`.
        var method: String
        /// Unique in the document: what client generators name their functions after.
        var id: String
        var tag: Tag
        var summary: String
        var description: String?
        var parameters: [Parameter] = []
        var requestBody: JSON?
        var answers: [Answer]
        /// The errors it may answer, beyond those of every request (``ErrorCase/everyRequest``).
        var errors: [ErrorCase] = []
        /// The security schemes it needs (the admin token, a bearer token), when one is
        /// configured; `""` is the empty requirement (the others are optional).
        var security: [String] = []

        var json: JSON {
            var members: [(key: String, value: JSON)] = [
                ("tags", .array([.string(tag.rawValue)])),
                ("summary", .string(summary)),
            ]
            if let description { members.append(("description", .string(description))) }
            members.append(("operationId", .string(id)))
            if !parameters.isEmpty { members.append(("parameters", .array(parameters.map(\.json)))) }
            if let requestBody { members.append(("requestBody", requestBody)) }
            let statuses = answers.map { (String($0.status), $0.json) } + ErrorCase.responses(for: ErrorCase.everyRequest + errors)
            members.append(("responses", .object(statuses.map { (key: $0.0, value: $0.1) })))
            if !security.isEmpty {
                members.append(("security", .array(security.map { $0.isEmpty ? .object([]) : .object([(key: $0, value: .array([]))]) })))
            }
            return .object(members)
        }
    }

    /// The tags operations are grouped by, in the order API explorers show them.
    enum Tag: String, CaseIterable {
        case resources, streams, operations

        var description: String {
            switch self {
            case .resources: "The configured resources: JSON by default, a live event stream with `Accept: text/event-stream`."
            case .streams: "Control of one live stream, by the id its first event announced."
            case .operations: "Liveness, readiness, metrics, the live page and this description."
            }
        }
    }

    /// A query, path or header parameter.
    struct Parameter {
        enum Location: String { case query, path, header }

        var name: String
        var location: Location
        var required = false
        var description: String
        var schema: JSON

        var json: JSON {
            var members: [(key: String, value: JSON)] = [
                ("name", .string(name)), ("in", .string(location.rawValue)), ("description", .string(description)),
            ]
            if required || location == .path { members.append(("required", .bool(true))) }
            // An array in the query is repeated, `resource=a&resource=b` (OpenAPI's default style).
            members.append(("schema", schema))
            return .object(members)
        }
    }

    /// A successful answer: its status, what it means, and its body in each media type.
    struct Answer {
        var status: Int
        var description: String
        var content: [(mediaType: String, schema: JSON)]
        /// Response headers worth describing (the usual ones, `ETag`, `Vary`, are not listed).
        var headers: [(name: String, header: JSON)] = []

        var json: JSON {
            var members: [(key: String, value: JSON)] = [("description", .string(description))]
            if !headers.isEmpty { members.append(("headers", .object(headers.map { (key: $0.name, value: $0.header) }))) }
            if !content.isEmpty {
                members.append(("content", .object(content.map { (key: $0.mediaType, value: .object([("schema", $0.schema)])) })))
            }
            return .object(members)
        }
    }

    /// One kind of event of a `text/event-stream` answer: its name, the schema of its `data`
    /// (JSON), when it is sent, and whether it always carries an `id:`.
    struct Event {
        var name: String
        var data: JSON
        var when: String
        var hasID = false
    }

    /// One error an operation may answer: its status, its `code` (nil where the document does
    /// not fix it), and when.
    struct ErrorCase {
        var status: Int
        var code: String?
        var when: String

        /// What any request may be answered before it reaches a route (``HTTPServer``).
        static let everyRequest = [
            ErrorCase(status: 400, code: "malformed_request",
                      when: "the request's framing could be read two ways (answered with `Connection: close`)"),
            ErrorCase(status: 431, code: "headers_too_large", when: "the request headers exceed `server.maxHeaderBytes`"),
            ErrorCase(status: 503, code: "too_many_connections", when: "the worker is at `server.maxConnections` connections"),
        ]

        /// The request's body exceeds `server.maxBodyBytes` (any request; listed where a body belongs).
        static let bodyTooLarge = ErrorCase(status: 413, code: "body_too_large", when: "the body exceeds `server.maxBodyBytes`")

        /// One response per status, in status order: the shared error shape with its `code`
        /// limited to the codes listed, and `Retry-After` on 503, `WWW-Authenticate` on 401.
        static func responses(for cases: [ErrorCase]) -> [(String, JSON)] {
            let statuses = Set(cases.map(\.status)).sorted()
            return statuses.map { status in
                let matching = cases.filter { $0.status == status }
                let description = matching.map { error in error.code.map { "`\($0)`: \(error.when)" } ?? error.when }
                var schema: [(key: String, value: JSON)] = [("$ref", .string(OpenAPIDocument.schemaReference("Error")))]
                var codes: [String] = []
                for code in matching.compactMap(\.code) where !codes.contains(code) { codes.append(code) }
                if !matching.contains(where: { $0.code == nil }) {
                    let code = JSON.object([("enum", .array(codes.map(JSON.string)))])
                    schema.append(("properties", .object([("error", .object([("properties", .object([("code", code)]))]))])))
                }
                var members: [(key: String, value: JSON)] = [("description", .string(description.joined(separator: "; ")))]
                switch status {
                case 401:
                    members.append(("headers", .object([("WWW-Authenticate", header("`Bearer`: the scheme to use", required: true))])))
                case 503:
                    members.append(("headers", .object([("Retry-After", header("seconds to wait before trying again", integer: true))])))
                case 429:
                    members.append(("headers", .object([
                        ("Retry-After", header("seconds to wait before trying again", integer: true)),
                        ("RateLimit-Policy", header("the limits the request counts against (`\"default\";q=40;w=2`)")),
                        ("RateLimit", header("what is left of each (`\"default\";r=0;t=2`)")),
                    ])))
                default: break
                }
                members.append(("content", .object([("application/json", .object([("schema", .object(schema))]))])))
                return (String(status), .object(members))
            }
        }

        static func header(_ description: String, required: Bool = false, integer: Bool = false) -> JSON {
            var members: [(key: String, value: JSON)] = [("description", .string(description))]
            if required { members.append(("required", .bool(true))) }
            members.append(("schema", .object([("type", .string(integer ? "integer" : "string"))])))
            return .object(members)
        }
    }
}
