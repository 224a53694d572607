import Aggregation
import TributaryConfiguration

/// `GET /openapi.json`: the OpenAPI 3.1 description of what a configuration serves, made from
/// it, so a resource added to the configuration is described as soon as it is served.
///
/// It describes every configured resource (JSON and `text/event-stream`, its query
/// parameters, its reload endpoint), `GET /events`, the stream control endpoints, the
/// operator's endpoints and this document, and the error shape `{"error":{"code","message"}}`
/// that every error answer shares, with the codes each operation may answer. An event stream
/// is described as OpenAPI 3.1 can: by the schema of one event (``eventSchema(_:)``), each
/// event's `data` by a `contentSchema`.
///
/// `scripts/openapi-check` validates the document, checks live streams' events against it and
/// runs schemathesis against the demo with it.
///
/// ```swift
/// let document = OpenAPIDocument(configuration).json.serialized   // once per configuration
/// ```
struct OpenAPIDocument {
    /// The version of the API this document describes (`info.version`), changed with the contract.
    static let apiVersion = "2.0.0"

    let configuration: Configuration

    init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// The whole document.
    var json: JSON {
        var paths: [(key: String, value: JSON)] = []
        for (name, resource) in configuration.resources.sorted(by: { $0.key < $1.key }) {
            paths += resourcePaths(name, resource)
        }
        paths += [
            ("/events", pathItem(eventsOperation)),
            ("/streams/{id}/triggers/{name}", pathItem(triggerOperation)),
            ("/streams/{id}/inputs/{name}", pathItem(inputOperation)),
            ("/", pathItem(livePageOperation)),
            ("/healthz", pathItem(healthOperation)),
            ("/readyz", pathItem(readyOperation)),
            ("/metrics", pathItem(metricsOperation)),
            ("/openapi.json", pathItem(documentOperation)),
        ]
        return .object([
            ("openapi", .string("3.1.0")),
            ("info", .object([
                ("title", .string("Tributary")),
                ("version", .string(Self.apiVersion)),
                ("summary", .string("Upstream REST APIs aggregated, served as JSON and as server-sent events.")),
                ("description", .string(Self.overview)),
            ])),
            ("tags", .array(OpenAPI.Tag.allCases.map { .object([("name", .string($0.rawValue)), ("description", .string($0.description))]) })),
            ("paths", .object(paths)),
            ("components", components),
        ])
    }

    static let overview = """
        Every configured resource is served at `/{name}`: as JSON by default, and as a live \
        server-sent event stream to a request with `Accept: text/event-stream`. A stream starts \
        with `retry:` and an `event: stream` naming the stream's id, triggers and inputs; then \
        `event: snapshot` (`id:` the document's version, `data:` the whole document) whenever \
        the document changes, `event: error` when a refresh fails (the stream stays open), and \
        a `: heartbeat` comment while nothing changes. A reconnecting client's `Last-Event-ID` \
        skips a snapshot it already has. With `?updates=patch`, each change after the first \
        document is `event: patch`, an RFC 6902 JSON Patch (`#/components/schemas/JSONPatch`) \
        from the document the client has, whose `id:` is the version it makes. When a configuration reload removes or changes the \
        resource, its stream ends with `event: error` code `resource_removed` (its URL is 404 \
        from then on) or `resource_changed` (reconnect for the new definition). `GET /events` carries several resources on one \
        connection. A stream's triggers and inputs are reached at `/streams/{id}/…`.

        Every error is `{"error":{"code","message"}}` (`#/components/schemas/Error`): each \
        operation lists the codes it may answer. Any request may also be answered 400 \
        `malformed_request`, 431 `headers_too_large` or 503 `too_many_connections` before it \
        reaches its route, a request with a body larger than `server.maxBodyBytes` 413 \
        `body_too_large`, and a method a path does not have 405 `method_not_allowed` with `Allow` \
        (a method libevent does not know, such as QUERY, gets its own 501 page).
        """

    func pathItem(_ operation: OpenAPI.Operation) -> JSON {
        .object([(key: operation.method, value: operation.json)])
    }

    // MARK: - Stream control

    private var triggerOperation: OpenAPI.Operation {
        let arguments = Set(configuration.resources.values.compactMap { resource -> String? in
            if case .pages(let settings) = resource { return settings.loadMoreArgument }
            return nil
        }).sorted()
        return OpenAPI.Operation(
            method: "post", id: "activateTrigger", tag: .streams, summary: "Activate a trigger of one live stream",
            description: "Only the stream with this id is affected, on whichever worker (or, in a fleet, replica) holds it.",
            parameters: [streamIDParameter, controlName(Self.triggerNames(of: configuration), what: "trigger")]
                + arguments.map { argument in
                    OpenAPI.Parameter(name: argument, location: .query,
                                      description: "`loadMore`: the id of the item whose next page to load.",
                                      schema: .object([("type", .string("string"))]))
                },
            answers: [accepted],
            errors: controlErrors(notFound: "unknown_trigger", what: "trigger")
                + [OpenAPI.ErrorCase(status: 409, code: "not_ready",
                                     when: "`loadMore` of an item whose first page is not in yet (as just after a `reload`): ask again")]
                + controlAccessErrors,
            security: bearerSecurity([]))
    }

    private var inputOperation: OpenAPI.Operation {
        // Every input is a search's query (SearchView): its limit is the value's.
        let value = JSON.object([("type", .string("string")), ("maxLength", .integer(SearchView.maximumQueryLength))])
        let body = JSON.object([
            ("description", .string(
                "The input's new value, as UTF-8 text (at most \(StreamControlRoutes.maximumInputBytes) bytes). Every input is a search's query, of at most \(SearchView.maximumQueryLength) characters.")),
            ("content", .object([("text/plain", .object([("schema", value)]))])),
        ])
        var errors = controlErrors(notFound: "unknown_input", what: "input")
        errors += [
            OpenAPI.ErrorCase(status: 400, code: "bad_request", when: "the value is not UTF-8 text"),
            OpenAPI.ErrorCase(status: 413, code: "input_too_large",
                              when: "the value is longer than \(StreamControlRoutes.maximumInputBytes) bytes"),
            OpenAPI.ErrorCase.bodyTooLarge,
        ]
        return OpenAPI.Operation(
            method: "put", id: "setInput", tag: .streams, summary: "Set an input of one live stream",
            description: "The stream's pipeline takes the new value (a search debounces it and cancels the search it supersedes).",
            parameters: [streamIDParameter, controlName(Self.inputNames(of: configuration), what: "input")],
            requestBody: body, answers: [accepted], errors: errors + controlAccessErrors, security: bearerSecurity([]))
    }

    private var streamIDParameter: OpenAPI.Parameter {
        OpenAPI.Parameter(
            name: "id", location: .path, description: "The stream's id, from its `event: stream`: 32 lowercase hex digits.",
            schema: .object([("type", .string("string")), ("pattern", .string("^[0-9a-f]{32}$"))]))
    }

    /// The `{name}` of a trigger or input: one of `names`, those the configured resources' streams have.
    private func controlName(_ names: [String], what: String) -> OpenAPI.Parameter {
        var schema: [(key: String, value: JSON)] = [("type", .string("string"))]
        if !names.isEmpty { schema.append(("enum", .array(names.map(JSON.string)))) }
        return OpenAPI.Parameter(
            name: "name", location: .path, description: "The \(what)'s name, as the stream's `event: stream` lists it.",
            schema: .object(schema))
    }

    private var accepted: OpenAPI.Answer {
        OpenAPI.Answer(status: 202, description: "Accepted: the stream's pipeline has it.", content: [
            ("application/json", Self.object(required: [
                ("stream", .object([("type", .string("string")), ("pattern", .string("^[0-9a-f]{32}$"))])),
                ("accepted", .object([("type", .string("string"))])),
            ])),
        ])
    }

    private func controlErrors(notFound: String, what: String) -> [OpenAPI.ErrorCase] {
        var errors = [
            OpenAPI.ErrorCase(status: 400, code: "bad_request", when: "the \(what) refuses the argument or value (the message says why)"),
            OpenAPI.ErrorCase(status: 404, code: "unknown_stream", when: "no live stream has this id"),
            OpenAPI.ErrorCase(status: 404, code: notFound, when: "the stream has no \(what) of this name"),
        ]
        if configuration.cluster != nil {
            errors += [
                OpenAPI.ErrorCase(status: 503, code: "cluster_unavailable",
                                  when: "the stream is not on this replica and the fleet cannot be reached"),
                OpenAPI.ErrorCase(status: 504, code: "cluster_timeout", when: "the replica holding the stream did not answer in time"),
            ]
        }
        return errors
    }

    /// Every trigger name of the configured resources' streams.
    static func triggerNames(of configuration: Configuration) -> [String] {
        var names: [String] = []
        for resource in configuration.resources.values {
            switch resource {
            case .list: names += SharedLiveView.triggerNames
            case .pages: names += RowsView.triggerNames
            case .search: break
            }
        }
        return Set(names).sorted()
    }

    /// Every input name of the configured resources' streams.
    static func inputNames(of configuration: Configuration) -> [String] {
        Set(configuration.resources.values.compactMap { resource -> String? in
            if case .search(let settings) = resource { return settings.definition.parameter }
            return nil
        }).sorted()
    }

    // MARK: - Operations

    private var livePageOperation: OpenAPI.Operation {
        OpenAPI.Operation(
            method: "get", id: "livePage", tag: .operations, summary: "The live page",
            description: "A page showing the resources live, over server-sent events.",
            answers: [OpenAPI.Answer(status: 200, description: "The page.", content: [("text/html", .object([("type", .string("string"))]))])])
    }

    private var healthOperation: OpenAPI.Operation {
        OpenAPI.Operation(
            method: "get", id: "health", tag: .operations, summary: "Liveness",
            answers: [OpenAPI.Answer(status: 200, description: "The service is running.", content: [
                ("application/json", Self.object(required: [("status", .object([("const", .string("ok"))]))])),
            ])])
    }

    private var readyOperation: OpenAPI.Operation {
        OpenAPI.Operation(
            method: "get", id: "ready", tag: .operations, summary: "Readiness",
            description: "Whether to send this process traffic: 200 while it serves; 503 while it starts (with "
                + "`cluster.redis`, until it has joined its fleet) and while it drains at shutdown. Losing Redis later "
                + "leaves it ready: each replica then serves alone. `/healthz` is liveness: 200 while the process runs.",
            answers: [OpenAPI.Answer(status: 200, description: "The service serves.", content: [
                ("application/json", Self.object(required: [("status", .object([("const", .string("ready"))]))])),
            ])],
            errors: [
                OpenAPI.ErrorCase(status: 503, code: "starting", when: "the service is starting (in a fleet: until it has joined the fleet)"),
                OpenAPI.ErrorCase(status: 503, code: "draining", when: "the service is stopping"),
            ])
    }

    private var metricsOperation: OpenAPI.Operation {
        OpenAPI.Operation(
            method: "get", id: "metrics", tag: .operations, summary: "Metrics, in the Prometheus text format (0.0.4)",
            answers: [OpenAPI.Answer(status: 200, description: "The metrics.", content: [("text/plain", .object([("type", .string("string"))]))])])
    }

    private var documentOperation: OpenAPI.Operation {
        OpenAPI.Operation(
            method: "get", id: "openAPIDocument", tag: .operations, summary: "This description of the API (OpenAPI 3.1)",
            description: "Made from the loaded configuration: every configured resource is in it.",
            answers: [OpenAPI.Answer(status: 200, description: "The document.", content: [
                ("application/json", .object([
                    ("type", .string("object")),
                    ("required", .array(["openapi", "info", "paths"].map(JSON.string))),
                ])),
            ])])
    }

    // MARK: - Components

    private var components: JSON {
        let code = JSON.object([("type", .string("string")), ("description", .string("Stable and machine-readable, e.g. `upstream_timeout`."))])
        let message = JSON.object([("type", .string("string")), ("description", .string("For people: what went wrong, and where."))])
        let codeAndMessage = Self.object(required: [("code", code), ("message", message)], closed: true)
        let names = JSON.object([("type", .string("array")), ("items", .object([("type", .string("string"))]))])
        let streamID = JSON.object([("type", .string("string")), ("pattern", .string("^[0-9a-f]{32}$"))])
        let resourceName = JSON.object([("type", .string("string")), ("description", .string("The resource's name."))])
        var members: [(key: String, value: JSON)] = [
            ("schemas", .object([
                ("Error", Self.described("Every error answer.", Self.object(required: [("error", codeAndMessage)], closed: true))),
                ("ItemError", Self.described(
                    "Why an item or row lacks its details or its next page (the `error` member Tributary adds to it).",
                    codeAndMessage)),
                ("StreamAnnouncement", Self.described(
                    "The data of a stream's first event, `event: stream`.",
                    Self.object(required: [("id", streamID), ("triggers", names), ("inputs", names)]))),
                ("EventsAnnouncement", Self.described(
                    "`GET /events`: the data of each resource's `event: stream`, in request order.",
                    Self.object(required: [("id", streamID), ("resource", resourceName), ("triggers", names), ("inputs", names)]))),
                ("JSONPatch", Self.described(
                    "An RFC 6902 JSON Patch: operations applied in order, each path an RFC 6901 JSON Pointer into the document "
                        + "as the operations before it left it.",
                    .object([("type", .string("array")), ("items", Self.patchOperation)]))),
                ("EventsError", Self.described(
                    "`GET /events`: the data of an `event: error`: a refresh of the resource failed, or a configuration "
                        + "reload removed it (`resource_removed`: its feed ends, the stream goes on) or changed it "
                        + "(`resource_changed`: the stream ends).",
                    Self.object(required: [("resource", resourceName), ("error", codeAndMessage)]))),
            ] + configuration.resources.sorted(by: { $0.key < $1.key }).map { name, resource in
                (key: Self.documentSchemaName(name), value: Self.documentSchema(resource))
            })),
        ]
        var schemes: [(key: String, value: JSON)] = []
        if configuration.server.adminToken != nil {
            schemes.append((Self.adminScheme, .object([
                ("type", .string("http")), ("scheme", .string("bearer")),
                ("description", .string("`server.adminToken` (`TRIBUTARY_ADMIN_TOKEN`).")),
            ])))
        }
        if let bearer = bearerSchemeEntry { schemes.append(bearer) }
        if !schemes.isEmpty { members.append(("securitySchemes", .object(schemes))) }
        return .object(members)
    }

    /// One operation of a patch: those Tributary sends (`add`, `remove`, `replace`, `move`).
    private static var patchOperation: JSON {
        let pointer = JSON.object([("type", .string("string")), ("pattern", .string("^(/[^/]*)*$"))])
        let operation = { (name: String, more: [(String, JSON)]) in
            object(required: [("op", .object([("const", .string(name))])), ("path", pointer)] + more)
        }
        return .object([("oneOf", .array([
            operation("add", [("value", .object([]))]),
            operation("remove", []),
            operation("replace", [("value", .object([]))]),
            operation("move", [("from", pointer)]),
        ]))])
    }

    /// The name of the admin token's security scheme.
    static let adminScheme = "adminToken"

    // MARK: - Schema helpers

    /// `#/components/schemas/<name>`.
    static func schemaReference(_ name: String) -> String { "#/components/schemas/\(name)" }

    /// A schema that is `#/components/schemas/<name>`.
    static func reference(_ name: String) -> JSON { .object([("$ref", .string(schemaReference(name)))]) }

    /// One event of a server-sent event stream, as an `EventSource` delivers it: `event`,
    /// `data` (JSON text), and `id`, `retry` where the stream set them. OpenAPI 3.1 describes a
    /// `text/event-stream` body by the schema of one event: one of `events`.
    static func eventSchema(_ events: [OpenAPI.Event]) -> JSON {
        let variants = events.map { event in
            var members: [(key: String, value: JSON)] = [("description", .string("`event: \(event.name)`: \(event.when)."))]
            if event.hasID { members.append(("required", .array([.string("id")]))) }
            members.append(("properties", .object([
                ("event", .object([("const", .string(event.name))])),
                ("data", .object([("contentMediaType", .string("application/json")), ("contentSchema", event.data)])),
            ])))
            return JSON.object(members)
        }
        return described(
            "One event. Between events, a `: heartbeat` comment keeps the connection visibly alive.",
            .object([
                ("type", .string("object")),
                ("required", .array([.string("event"), .string("data")])),
                ("properties", .object([
                    ("event", .object([("type", .string("string"))])),
                    ("data", .object([("type", .string("string"))])),
                    ("id", .object([("type", .string("string"))])),
                    ("retry", .object([("type", .string("integer")), ("description", .string("Milliseconds to wait before reconnecting."))])),
                ])),
                ("oneOf", .array(variants)),
            ]))
    }

    /// An object schema whose `properties` are all required; `closed`: no other member.
    static func object(required properties: [(String, JSON)], closed: Bool = false) -> JSON {
        var members: [(key: String, value: JSON)] = [
            ("type", .string("object")),
            ("required", .array(properties.map { .string($0.0) })),
            ("properties", .object(properties.map { (key: $0.0, value: $0.1) })),
        ]
        if closed { members.append(("additionalProperties", .bool(false))) }
        return .object(members)
    }

    /// `schema` with a `description` first.
    static func described(_ description: String, _ schema: JSON) -> JSON {
        .object([("description", .string(description))] + (schema.objectValue ?? []))
    }
}
