import Aggregation
import Redis
import Testing
@testable import TributaryConfiguration
@testable import TributaryServer
import UpstreamClient

@Suite("OpenAPI document: the API a configuration serves, described from the Configuration value")
struct OpenAPIDocumentTests {
    /// A configuration with a resource of each kind, and a second pages resource whose
    /// `loadMore` names its item with another argument: `groups` (list), `rows` and `feeds`
    /// (pages), `search` (search, with `staleIfError`).
    static func configuration(adminToken: String? = nil, cluster: Configuration.Cluster? = nil) throws -> Configuration {
        var configuration = Configuration()
        configuration.server.adminToken = adminToken
        configuration.cluster = cluster
        configuration.upstreams["tasks"] = .init(url: try BaseURL("http://127.0.0.1:4567/tasks-base"))
        configuration.upstreams["media"] = .init(url: try BaseURL("http://127.0.0.1:4568"))
        configuration.resources["groups"] = .list(.init(upstream: "tasks", routing: .init(route: "/groups"), definition: ListResource.Definition(
            listPath: "/groups", itemsAt: JSONPath("result"), idMember: "key", detailPath: "/groups/{id}/metadata",
            detailAt: JSONPath("result"), concurrency: 16, onItemFailure: .mark)))
        configuration.resources["rows"] = .pages(.init(upstream: "media", routing: .init(route: "/rows"), definition: pagesDefinition(rowItemKey: "topic", rowPagesKey: "medias")))
        configuration.resources["feeds"] = .pages(.init(
            upstream: "media", routing: .init(route: "/feeds"), definition: pagesDefinition(rowItemKey: "feed", rowPagesKey: "posts"), loadMoreArgument: "feed"))
        configuration.resources["search"] = .search(.init(
            upstream: "media", routing: .init(route: "/search"),
            definition: SearchResource.Definition(path: "/search", parameter: "term", itemsAt: JSONPath("items"), minimumLength: 2,
                                                  debounce: .milliseconds(300)),
            answers: .init(staleIfError: .seconds(30))))
        return configuration
    }

    static func pagesDefinition(rowItemKey: String, rowPagesKey: String) -> PagedListResource.Definition {
        PagedListResource.Definition(
            listPath: "/topics", itemsAt: JSONPath("result"), idMember: "id", pagePath: "/topics/{id}/medias",
            pageItemsAt: JSONPath("result"), cursorAt: JSONPath("next"), cursorParameter: "page",
            rowItemKey: rowItemKey, rowPagesKey: rowPagesKey, concurrency: 8)
    }

    static func document(_ configuration: Configuration) -> JSON {
        OpenAPIDocument(configuration).json
    }

    /// Every operation of `document`: its path, its method and itself.
    static func operations(_ document: JSON) -> [(path: String, method: String, operation: JSON)] {
        (document["paths"]?.objectValue ?? []).flatMap { path, item in
            (item.objectValue ?? []).map { (path: path, method: $0.key, operation: $0.value) }
        }
    }

    /// The parameter of `operation` named `name`.
    static func parameter(_ operation: JSON?, _ name: String) -> JSON? {
        operation?["parameters"]?.arrayValue?.first { $0["name"] == .string(name) }
    }

    /// The error codes that `operation`'s `status` answer allows.
    static func codes(_ operation: JSON?, _ status: Int) -> [String]? {
        operation?.at("responses", "\(status)", "content", "application/json", "schema", "properties", "error", "properties", "code", "enum")?
            .strings
    }

    // MARK: - The document

    @Test("the document is OpenAPI 3.1.0 with a title, the API's version, and the tags every operation is grouped by")
    func header() throws {
        let document = Self.document(try Self.configuration())
        #expect(document["openapi"] == .string("3.1.0"))
        #expect(document.at("info", "title") == .string("Tributary"))
        #expect(document.at("info", "version") == .string(OpenAPIDocument.apiVersion))
        #expect(document.at("info", "description")?.stringValue?.isEmpty == false)
        let tags = document["tags"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(tags == ["resources", "streams", "operations"])
        for (path, method, operation) in Self.operations(document) {
            #expect(operation["tags"]?.strings?.count == 1, "\(method) \(path)")
            #expect(operation["tags"]?.strings?.allSatisfy { tags?.contains($0) == true } == true, "\(method) \(path)")
            #expect(operation["summary"]?.stringValue?.isEmpty == false, "\(method) \(path)")
        }
    }

    @Test("the paths are each resource's, its reload for a list or pages resource, then /events, stream control and the operator's endpoints")
    func paths() throws {
        let document = Self.document(try Self.configuration())
        #expect(document["paths"]?.keys == [
            "/feeds", "/feeds/reload", "/groups", "/groups/reload", "/rows", "/rows/reload", "/search",
            "/events", "/streams/{id}/triggers/{name}", "/streams/{id}/inputs/{name}", "/", "/healthz", "/readyz", "/metrics", "/openapi.json",
        ])
        let methods = Dictionary(uniqueKeysWithValues: (document["paths"]?.objectValue ?? []).map { ($0.key, $0.value.keys) })
        #expect(methods["/groups"] == ["get"])
        #expect(methods["/groups/reload"] == ["post"])
        #expect(methods["/search"] == ["get"])
        #expect(methods["/events"] == ["get"])
        #expect(methods["/streams/{id}/triggers/{name}"] == ["post"])
        #expect(methods["/streams/{id}/inputs/{name}"] == ["put"])
        for path in ["/", "/healthz", "/readyz", "/metrics", "/openapi.json"] { #expect(methods[path] == ["get"], "\(path)") }
        #expect(Self.operations(document).count == 15, "one operation per path")
    }

    @Test("every operation has an id of its own, which client generators name their functions after")
    func uniqueOperationIDs() throws {
        let ids = Self.operations(Self.document(try Self.configuration())).compactMap { $0.operation["operationId"]?.stringValue }
        #expect(ids.count == Self.operations(Self.document(try Self.configuration())).count)
        #expect(Set(ids).count == ids.count)
        #expect(ids.contains("get_groups") && ids.contains("reload_groups") && ids.contains("get_search"))
    }

    @Test("every {parameter} of a path is declared as a required path parameter of its operation, and no other")
    func pathParameters() throws {
        for (path, method, operation) in Self.operations(Self.document(try Self.configuration())) {
            let placeholders = path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) }
            let declared = (operation["parameters"]?.arrayValue ?? []).filter { $0["in"] == .string("path") }
            #expect(declared.compactMap { $0["name"]?.stringValue } == placeholders, "\(method) \(path)")
            #expect(declared.allSatisfy { $0["required"] == .bool(true) }, "\(method) \(path)")
        }
    }

    @Test("every $ref names a schema the document's components hold")
    func referencesResolve() throws {
        let document = Self.document(try Self.configuration())
        let schemas = Set(document.at("components", "schemas")?.keys ?? [])
        var references: [String] = []
        func collect(_ value: JSON) {
            switch value {
            case .array(let elements): elements.forEach(collect)
            default:
                for (key, member) in value.objectValue ?? [] {
                    if key == "$ref", let reference = member.stringValue { references.append(reference) } else { collect(member) }
                }
            }
        }
        collect(document)
        #expect(references.count > 20)
        for reference in Set(references) {
            #expect(reference.hasPrefix("#/components/schemas/"), "\(reference)")
            #expect(schemas.contains(String(reference.dropFirst("#/components/schemas/".count))), "\(reference)")
        }
    }

    @Test("the document reads back as the JSON it is, and does not depend on the order resources were added in")
    func stableText() throws {
        let configuration = try Self.configuration()
        let text = Self.document(configuration).serialized
        #expect(try JSON(parsing: text) == Self.document(configuration))
        var reordered = Configuration()
        reordered.upstreams = configuration.upstreams
        for name in configuration.resources.keys.sorted().reversed() { reordered.resources[name] = configuration.resources[name] }
        #expect(Self.document(reordered).serialized == text)
    }

    @Test("no secret reaches the document: not the admin token, an upstream's URL nor the fleet's Redis")
    func noSecrets() throws {
        let redis = RedisEndpoint(host: "redis.internal", port: 6390, username: "fleet-user", password: "fleet-password")
        let text = String(decoding: Self.document(try Self.configuration(adminToken: "admin-secret", cluster: .init(redis: redis))).serialized,
                          as: UTF8.self)
        for secret in ["admin-secret", "127.0.0.1", "4567", "tasks-base", "redis.internal", "6390", "fleet-user", "fleet-password"] {
            #expect(!text.contains(secret), "\(secret)")
        }
    }

    // MARK: - Resources

    @Test("each resource answers 200 with its JSON document or its event stream, and 304 with no body")
    func resourceAnswers() throws {
        let document = Self.document(try Self.configuration())
        for name in ["groups", "rows", "feeds", "search"] {
            let operation = document.at("paths", "/\(name)", "get")
            #expect(operation?["tags"]?.strings == ["resources"], "\(name)")
            let content = operation?.at("responses", "200", "content")
            #expect(content?.keys == ["application/json", "text/event-stream"], "\(name)")
            #expect(content?.at("application/json", "schema", "$ref") == .string("#/components/schemas/\(name)Document"), "\(name)")
            #expect(document.at("components", "schemas", "\(name)Document") != nil, "\(name)")
            let notModified = operation?.at("responses", "304")
            #expect(notModified?["description"] != nil, "\(name)")
            #expect(notModified?["content"] == nil, "\(name)")
            #expect(Self.parameter(operation, "If-None-Match")?["in"] == .string("header"), "\(name)")
            #expect(Self.parameter(operation, "Last-Event-ID")?["in"] == .string("header"), "\(name)")
        }
    }

    @Test("a resource's event stream is one of its four events: stream, snapshot and patch with an id, error")
    func resourceEventStream() throws {
        let document = Self.document(try Self.configuration())
        let stream = document.at("paths", "/rows", "get", "responses", "200", "content", "text/event-stream", "schema")
        #expect(stream?["type"] == .string("object"))
        #expect(stream?["required"]?.strings == ["event", "data"])
        #expect(stream?["properties"]?.keys == ["event", "data", "id", "retry"])
        let events = stream?["oneOf"]?.arrayValue ?? []
        #expect(events.map { $0.at("properties", "event", "const") } == [.string("stream"), .string("snapshot"), .string("patch"), .string("error")])
        #expect(events.map { $0["required"]?.strings } == [nil, ["id"], ["id"], nil], "a snapshot and a patch always have an id: the version")
        #expect(events.map { $0.at("properties", "data", "contentMediaType") } == Array(repeating: .string("application/json"), count: 4))
        #expect(events.map { $0.at("properties", "data", "contentSchema", "$ref")?.stringValue } == [
            "#/components/schemas/StreamAnnouncement", "#/components/schemas/rowsDocument", "#/components/schemas/JSONPatch",
            "#/components/schemas/Error",
        ])
    }

    @Test("a list document is its items with their configured id; a pages document, rows of the item and its pages; a search, an array; none required, as fields may leave any out")
    func documentSchemas() throws {
        let schemas = Self.document(try Self.configuration()).at("components", "schemas")
        let groups = schemas?["groupsDocument"]
        #expect(groups?["type"] == .string("array"))
        #expect(groups?.at("items", "properties", "key", "type")?.strings == ["string", "number"])
        let rows = schemas?["rowsDocument"]
        #expect(rows?.at("items", "properties", "topic", "properties", "id", "type")?.strings == ["string", "number"])
        #expect(rows?.at("items", "properties", "medias", "type") == .string("array"))
        #expect(schemas?.at("feedsDocument", "items", "properties", "feed") != nil)
        #expect(schemas?.at("feedsDocument", "items", "properties", "posts") != nil)
        // `fields=name` leaves the id out: a projected document is a valid one.
        for name in ["groupsDocument", "rowsDocument", "feedsDocument"] {
            #expect(schemas?.at(name, "items", "required") == nil, "\(name)")
            #expect(schemas?.at(name, "items", "properties", "topic", "required") == nil, "\(name)")
        }
        let search = schemas?["searchDocument"]
        #expect(search?["type"] == .string("array"))
        #expect(search?["description"]?.stringValue?.contains("shorter than 2 characters") == true, "the configured minimum length")
    }

    @Test("a list or pages resource's JSON may fail with every upstream error, its stream with too_many_subscribers (and a list's with too_many_pipelines)")
    func resourceErrors() throws {
        let document = Self.document(try Self.configuration())
        for name in ["groups", "rows"] {
            let operation = document.at("paths", "/\(name)", "get")
            #expect(Self.codes(operation, 502) == ["upstream_unavailable", "upstream_status", "upstream_malformed", "invalid_item_id"], "\(name)")
            let pipelines = name == "groups" ? ["too_many_pipelines"] : []
            #expect(Self.codes(operation, 503) == ["too_many_connections", "upstream_saturated", "upstream_circuit_open"] + pipelines + ["too_many_subscribers"],
                    "\(name)")
            #expect(Self.codes(operation, 504) == ["upstream_timeout"], "\(name)")
            #expect(Self.codes(operation, 400) == ["malformed_request", "invalid_parameter"], "\(name): an updates value that names no mode")
        }
    }

    @Test("a search resource takes its query parameter, at most 256 characters, and may answer 400 bad_request for a longer one")
    func searchParameter() throws {
        let operation = Self.document(try Self.configuration()).at("paths", "/search", "get")
        let term = Self.parameter(operation, "term")
        #expect(term?["in"] == .string("query"))
        #expect(term?["required"] == nil)
        #expect(term?.at("schema", "maxLength") == .integer(SearchView.maximumQueryLength))
        #expect(Self.codes(operation, 400) == ["malformed_request", "bad_request", "invalid_parameter"])
        #expect(Self.parameter(operation, "q") == nil, "the configured parameter, not the default")
    }

    @Test("staleIfError adds Age and Tributary-Stale to the resource's 200 and 304; without it, no such headers")
    func staleHeaders() throws {
        let document = Self.document(try Self.configuration())
        for status in ["200", "304"] {
            #expect(document.at("paths", "/search", "get", "responses", status, "headers")?.keys == ["Age", "Tributary-Stale"], "\(status)")
            #expect(document.at("paths", "/search", "get", "responses", status, "headers", "Age", "schema", "type") == .string("integer"))
            #expect(document.at("paths", "/groups", "get", "responses", status, "headers") == nil, "\(status)")
        }
    }

    @Test("a reload answers 202 with how many it reloaded; with no admin token it needs none")
    func reload() throws {
        let document = Self.document(try Self.configuration())
        let reload = document.at("paths", "/rows/reload", "post")
        #expect(reload?["operationId"] == .string("reload_rows"))
        #expect(reload?.at("responses", "202", "content", "application/json", "schema", "properties", "reloaded", "type") == .string("integer"))
        #expect(reload?["security"] == nil)
        #expect(reload?.at("responses", "401") == nil)
        #expect(document.at("components", "securitySchemes") == nil)
    }

    @Test("with an admin token, every reload needs the bearer scheme and may answer 401 with WWW-Authenticate; reading needs none")
    func adminToken() throws {
        let document = Self.document(try Self.configuration(adminToken: "admin-secret"))
        #expect(document.at("components", "securitySchemes", "adminToken", "type") == .string("http"))
        #expect(document.at("components", "securitySchemes", "adminToken", "scheme") == .string("bearer"))
        for (path, method, operation) in Self.operations(document) {
            if path.hasSuffix("/reload") {
                #expect(operation["security"] == .array([.object([("adminToken", .array([]))])]), "\(path)")
                #expect(Self.codes(operation, 401) == ["unauthorized"], "\(path)")
                #expect(operation.at("responses", "401", "headers", "WWW-Authenticate", "required") == .bool(true), "\(path)")
            } else {
                #expect(operation["security"] == nil, "\(method) \(path)")
                #expect(operation.at("responses", "401") == nil, "\(method) \(path)")
            }
        }
    }

    // MARK: - GET /events

    @Test("GET /events takes 1 to 16 distinct resources by name, and each search's parameter prefixed with its name")
    func eventsParameters() throws {
        let operation = Self.document(try Self.configuration()).at("paths", "/events", "get")
        let resource = Self.parameter(operation, "resource")
        #expect(resource?["in"] == .string("query"))
        #expect(resource?["required"] == .bool(true))
        #expect(resource?.at("schema", "items", "enum")?.strings == ["feeds", "groups", "rows", "search"])
        #expect(resource?.at("schema", "minItems") == .integer(1))
        #expect(resource?.at("schema", "maxItems") == .integer(16))
        #expect(resource?.at("schema", "uniqueItems") == .bool(true))
        #expect(operation?["parameters"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == [
            "resource", "feeds.fields", "groups.fields", "rows.fields", "search.term", "search.fields", "updates", "progressive", "Last-Event-ID",
        ])
        #expect(Self.parameter(operation, "search.term")?.at("schema", "maxLength") == .integer(SearchView.maximumQueryLength))
    }

    @Test("GET /events answers one event stream whose snapshots carry one of the resources' documents, by name")
    func eventsStream() throws {
        let operation = Self.document(try Self.configuration()).at("paths", "/events", "get")
        #expect(operation?.at("responses", "200", "content")?.keys == ["text/event-stream"])
        let events = operation?.at("responses", "200", "content", "text/event-stream", "schema", "oneOf")?.arrayValue ?? []
        #expect(events.map { $0.at("properties", "event", "const") } == [.string("stream"), .string("snapshot"), .string("patch"), .string("error")])
        #expect(events.first?.at("properties", "data", "contentSchema", "$ref") == .string("#/components/schemas/EventsAnnouncement"))
        #expect(events.last?.at("properties", "data", "contentSchema", "$ref") == .string("#/components/schemas/EventsError"))
        let snapshots = events.dropFirst().first?.at("properties", "data", "contentSchema", "oneOf")?.arrayValue ?? []
        #expect(snapshots.map { $0.at("properties", "resource", "const")?.stringValue } == ["feeds", "groups", "rows", "search"])
        #expect(snapshots.map { $0.at("properties", "data", "$ref")?.stringValue } == [
            "#/components/schemas/feedsDocument", "#/components/schemas/groupsDocument",
            "#/components/schemas/rowsDocument", "#/components/schemas/searchDocument",
        ])
        #expect(Self.codes(operation, 503) == ["too_many_connections", "too_many_subscribers", "too_many_pipelines"])
        #expect(operation?.at("responses", "404", "content", "application/json", "schema", "$ref") == .string("#/components/schemas/Error"))
        #expect(Self.codes(operation, 404) == nil, "any code: the document does not fix it")
    }

    // MARK: - Stream control

    @Test("a trigger's name is one the resources' streams have; each pages resource's loadMore argument is a query parameter")
    func triggerNames() throws {
        let operation = Self.document(try Self.configuration()).at("paths", "/streams/{id}/triggers/{name}", "post")
        #expect(operation?["tags"]?.strings == ["streams"])
        #expect(Self.parameter(operation, "name")?.at("schema", "enum")?.strings == ["loadMore", "reload"])
        #expect(Self.parameter(operation, "id")?.at("schema", "pattern") == .string("^[0-9a-f]{32}$"))
        #expect(operation?["parameters"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["id", "name", "feed", "topic"])
        #expect(Self.parameter(operation, "topic")?["in"] == .string("query"))

        var lists = Configuration()
        lists.resources["groups"] = try Self.configuration().resources["groups"]
        let listsOnly = Self.document(lists).at("paths", "/streams/{id}/triggers/{name}", "post")
        #expect(Self.parameter(listsOnly, "name")?.at("schema", "enum")?.strings == ["reload"])
        #expect(listsOnly?["parameters"]?.arrayValue?.count == 2, "no loadMore, no argument")
    }

    @Test("an input's name is one of the searches' parameters; its value is text/plain of at most 256 characters")
    func inputNames() throws {
        let operation = Self.document(try Self.configuration()).at("paths", "/streams/{id}/inputs/{name}", "put")
        #expect(operation?["tags"]?.strings == ["streams"])
        #expect(Self.parameter(operation, "name")?.at("schema", "enum")?.strings == ["term"])
        let body = operation?.at("requestBody", "content")
        #expect(body?.keys == ["text/plain"])
        #expect(body?.at("text/plain", "schema", "maxLength") == .integer(SearchView.maximumQueryLength))
        #expect(Self.codes(operation, 413) == ["input_too_large", "body_too_large"])
        #expect(Self.codes(operation, 400) == ["malformed_request", "bad_request"])
    }

    @Test("stream control answers 202 with the stream and what it accepted, or 404 for an unknown stream or control")
    func streamControlAnswers() throws {
        let document = Self.document(try Self.configuration())
        for (path, method, notFound) in [
            ("/streams/{id}/triggers/{name}", "post", "unknown_trigger"), ("/streams/{id}/inputs/{name}", "put", "unknown_input"),
        ] {
            let operation = document.at("paths", path, method)
            let accepted = operation?.at("responses", "202", "content", "application/json", "schema")
            #expect(accepted?["required"]?.strings == ["stream", "accepted"], "\(path)")
            #expect(accepted?.at("properties", "stream", "pattern") == .string("^[0-9a-f]{32}$"), "\(path)")
            #expect(Self.codes(operation, 404) == ["unknown_stream", notFound], "\(path)")
        }
    }

    @Test("in a fleet, stream control may also answer 503 cluster_unavailable and 504 cluster_timeout; alone, neither")
    func clusterErrors() throws {
        let fleet = Self.document(try Self.configuration(cluster: .init(redis: RedisEndpoint(host: "127.0.0.1"))))
        let alone = Self.document(try Self.configuration())
        for (path, method) in [("/streams/{id}/triggers/{name}", "post"), ("/streams/{id}/inputs/{name}", "put")] {
            #expect(Self.codes(fleet.at("paths", path, method), 503) == ["too_many_connections", "cluster_unavailable"], "\(path)")
            #expect(Self.codes(fleet.at("paths", path, method), 504) == ["cluster_timeout"], "\(path)")
            #expect(Self.codes(alone.at("paths", path, method), 503) == ["too_many_connections"], "\(path)")
            #expect(alone.at("paths", path, method, "responses", "504") == nil, "\(path)")
        }
    }

    @Test("with no resources, the document still describes /events, stream control and the operator's endpoints, naming no control")
    func noResources() {
        let document = Self.document(Configuration())
        #expect(document["paths"]?.keys == [
            "/events", "/streams/{id}/triggers/{name}", "/streams/{id}/inputs/{name}", "/", "/healthz", "/readyz", "/metrics", "/openapi.json",
        ])
        #expect(Self.parameter(document.at("paths", "/streams/{id}/triggers/{name}", "post"), "name")?.at("schema", "enum") == nil)
        #expect(Self.parameter(document.at("paths", "/streams/{id}/inputs/{name}", "put"), "name")?.at("schema", "enum") == nil)
        #expect(document.at("components", "schemas")?.keys == ["Error", "ItemError", "StreamAnnouncement", "EventsAnnouncement", "JSONPatch", "EventsError"])
    }

    // MARK: - Operations

    @Test("the operator's endpoints: the live page as HTML, liveness as {status: ok}, readiness as {status: ready} or 503, metrics as text, this document as JSON")
    func operatorEndpoints() throws {
        let paths = Self.document(try Self.configuration())["paths"]
        let expected: [(String, String, String)] = [
            ("/", "livePage", "text/html"), ("/healthz", "health", "application/json"), ("/readyz", "ready", "application/json"),
            ("/metrics", "metrics", "text/plain"),
            ("/openapi.json", "openAPIDocument", "application/json"),
        ]
        for (path, id, mediaType) in expected {
            let operation = paths?.at(path, "get")
            #expect(operation?["operationId"] == .string(id), "\(path)")
            #expect(operation?["tags"]?.strings == ["operations"], "\(path)")
            #expect(operation?.at("responses", "200", "content")?.keys == [mediaType], "\(path)")
        }
        #expect(paths?.at("/healthz", "get", "responses", "200", "content", "application/json", "schema", "properties", "status", "const")
            == .string("ok"))
        #expect(paths?.at("/readyz", "get", "responses", "200", "content", "application/json", "schema", "properties", "status", "const")
            == .string("ready"))
        #expect(paths?.at("/readyz", "get", "responses", "503", "content", "application/json", "schema", "properties", "error", "properties",
                          "code", "enum")?.strings == ["too_many_connections", "starting", "draining"])
    }

    // MARK: - Errors

    @Test("every error is {error: {code, message}} and nothing else; an item's error is {code, message}")
    func errorShape() throws {
        let schemas = Self.document(try Self.configuration()).at("components", "schemas")
        let error = schemas?["Error"]
        #expect(error?["type"] == .string("object"))
        #expect(error?["required"]?.strings == ["error"])
        #expect(error?["additionalProperties"] == .bool(false))
        let codeAndMessage = error?.at("properties", "error")
        #expect(codeAndMessage?["required"]?.strings == ["code", "message"])
        #expect(codeAndMessage?["additionalProperties"] == .bool(false))
        #expect(codeAndMessage?.at("properties", "code", "type") == .string("string"))
        #expect(codeAndMessage?.at("properties", "message", "type") == .string("string"))
        #expect(schemas?.at("ItemError", "required")?.strings == ["code", "message"])
        #expect(schemas?.at("EventsError", "required")?.strings == ["resource", "error"])
    }

    @Test("every operation may answer what any request may: 400 malformed_request, 431 headers_too_large, 503 too_many_connections")
    func errorsOfEveryRequest() throws {
        for (path, method, operation) in Self.operations(Self.document(try Self.configuration())) {
            #expect(operation.at("responses", "400", "description")?.stringValue?.contains("`malformed_request`") == true, "\(method) \(path)")
            #expect(Self.codes(operation, 431) == ["headers_too_large"], "\(method) \(path)")
            #expect(Self.codes(operation, 503)?.first == "too_many_connections", "\(method) \(path)")
        }
    }

    @Test("every error answer is the shared shape as JSON, described by its codes; a 503 or 429 says Retry-After, in seconds")
    func errorAnswers() throws {
        for (path, method, operation) in Self.operations(Self.document(try Self.configuration(adminToken: "token"))) {
            for (status, answer) in operation["responses"]?.objectValue ?? [] where Int(status)! >= 400 {
                let place = "\(method) \(path) \(status)"
                #expect(answer["content"]?.keys == ["application/json"], "\(place)")
                #expect(answer.at("content", "application/json", "schema", "$ref") == .string("#/components/schemas/Error"), "\(place)")
                for code in Self.codes(operation, Int(status)!) ?? [] {
                    #expect(answer["description"]?.stringValue?.contains("`\(code)`") == true, "\(place): \(code)")
                }
                #expect((answer.at("headers", "Retry-After", "schema", "type") == .string("integer")) == (status == "503" || status == "429"), "\(place)")
            }
        }
    }

    @Test("answers are listed in status order")
    func statusOrder() throws {
        for (path, method, operation) in Self.operations(Self.document(try Self.configuration(adminToken: "token"))) {
            let statuses = operation["responses"]?.keys.compactMap { Int($0) } ?? []
            #expect(statuses == statuses.sorted(), "\(method) \(path)")
            #expect(statuses.count == operation["responses"]?.keys.count, "\(method) \(path)")
        }
    }
}

extension JSON {
    /// The value at `keys`, member by member.
    fileprivate func at(_ keys: String...) -> JSON? {
        keys.reduce(self as JSON?) { value, key in value?[key] }
    }

    /// The names of an object's members, in order.
    fileprivate var keys: [String] { objectValue?.map(\.key) ?? [] }

    /// The strings of an array of strings.
    fileprivate var strings: [String]? {
        guard let elements = arrayValue else { return nil }
        let strings = elements.compactMap(\.stringValue)
        return strings.count == elements.count ? strings : nil
    }
}
