import Foundation
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("GET /openapi.json: the API described, from the loaded configuration")
struct OpenAPITests {
    /// The shipped configuration with two more resources: a list `teams` and a search `lookup`
    /// whose query parameter is `term` and which answers stale if error (`resources:` is the
    /// file's last section).
    static let extendedYAML = ShippedConfiguration.yaml + """

          teams:
            kind: list
            upstream: tasks
            list: {path: /teams, items: result, id: slug}
            details: {path: "/teams/{id}/profile", value: result}
          lookup:
            kind: search
            upstream: search
            path: /lookup
            parameter: term
            staleIfError: 30s

        """

    /// The document a worker of `yaml` serves, parsed, and the answer it came in.
    static func document(_ yaml: String) async throws -> (document: [String: Any], response: TestResponse) {
        let service = try await ServiceHarness(yaml: yaml)
        let response = try await service.get("/openapi.json")
        let again = try await service.get("/openapi.json")
        await service.stop()
        #expect(again.body == response.body, "the same document for every request")
        return (try #require(try response.json() as? [String: Any]), response)
    }

    @Test("a resource added to the configuration is described: its paths, parameters, document schema, stream control and /events")
    func addedResourceAppears() async throws {
        let (document, response) = try await Self.document(Self.extendedYAML)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == [
            "/groups", "/groups/reload", "/rows", "/rows/reload", "/search", "/teams", "/teams/reload", "/lookup",
            "/teams/{team}/groups", "/teamgroups/reload", "/me/groups", "/mygroups/reload",
            "/events", "/streams/{id}/triggers/{name}", "/streams/{id}/inputs/{name}", "/", "/healthz", "/readyz", "/metrics", "/openapi.json",
        ])
        #expect(Set(paths["/teams"]?.keys.map { $0 } ?? []) == ["get"])
        #expect(Set(paths["/teams/reload"]?.keys.map { $0 } ?? []) == ["post"])

        let teams = try #require(paths["/teams"]?["get"] as? [String: Any])
        let teamsContent = try #require(Self.at(teams, "responses", "200", "content") as? [String: Any])
        #expect(Set(teamsContent.keys) == ["application/json", "text/event-stream"])
        #expect(Self.at(teamsContent, "application/json", "schema", "$ref") as? String == "#/components/schemas/teamsDocument")
        let teamsDocument = try #require(Self.at(document, "components", "schemas", "teamsDocument") as? [String: Any])
        #expect(Self.at(teamsDocument, "items", "properties", "slug") != nil, "the configured id member")
        #expect(Self.codes(teams, "502") == ["upstream_unavailable", "upstream_status", "upstream_malformed", "invalid_item_id"])
        #expect(Self.codes(teams, "503") == ["too_many_connections", "upstream_saturated", "upstream_circuit_open", "too_many_pipelines", "too_many_subscribers"])

        let lookup = try #require(paths["/lookup"]?["get"] as? [String: Any])
        let term = try #require(Self.parameters(lookup).first { $0["name"] as? String == "term" })
        #expect(term["in"] as? String == "query")
        #expect(Self.at(term, "schema", "maxLength") as? Int == 256)
        #expect(Self.codes(lookup, "400") == ["malformed_request", "bad_request", "invalid_parameter"])
        let staleHeaders = Self.at(lookup, "responses", "200", "headers") as? [String: Any]
        #expect(Set(staleHeaders?.keys.map { $0 } ?? []) == ["Age", "Tributary-Stale"], "staleIfError: the stale answer's headers")
        #expect(Self.at(teams, "responses", "200", "headers") == nil, "no staleIfError: no stale answers")

        let events = try #require(paths["/events"]?["get"] as? [String: Any])
        let resource = try #require(Self.parameters(events).first { $0["name"] as? String == "resource" })
        #expect(Self.at(resource, "schema", "items", "enum") as? [String] == ["groups", "lookup", "mygroups", "rows", "search", "teamgroups", "teams"])
        #expect(Self.at(resource, "schema", "maxItems") as? Int == 16)
        #expect(Set(Self.parameters(events).compactMap { $0["name"] as? String }) == [
            "resource", "lookup.term", "search.q", "teamgroups.team", "teamgroups.status", "updates", "progressive", "Last-Event-ID",
            "groups.fields", "lookup.fields", "mygroups.fields", "rows.fields", "search.fields", "teamgroups.fields", "teams.fields",
        ])

        let input = try #require(paths["/streams/{id}/inputs/{name}"]?["put"] as? [String: Any])
        let inputName = try #require(Self.parameters(input).first { $0["name"] as? String == "name" })
        #expect(Self.at(inputName, "schema", "enum") as? [String] == ["q", "term"])
        #expect(Self.codes(input, "404") == ["unknown_stream", "unknown_input"])
        #expect(Self.codes(input, "413") == ["input_too_large", "body_too_large"])
        let trigger = try #require(paths["/streams/{id}/triggers/{name}"]?["post"] as? [String: Any])
        let triggerName = try #require(Self.parameters(trigger).first { $0["name"] as? String == "name" })
        #expect(Self.at(triggerName, "schema", "enum") as? [String] == ["loadMore", "reload"])
        #expect(Self.at(trigger, "responses", "503") != nil, "too_many_connections, as on every request")
        #expect(Self.codes(trigger, "503") == ["too_many_connections"], "no cluster configured: no cluster_unavailable")
        #expect(Self.at(document, "components", "securitySchemes") == nil, "no admin token configured")
        #expect(Self.at(paths, "/teams/reload", "post", "responses", "401") == nil)
        #expect(Self.codes(try #require(paths["/teams/reload"]?["post"] as? [String: Any]), "403") == ["forbidden"],
                "without a token, only loopback clients may reload")
    }

    @Test("updates=patch is described: the parameter with the id its arrays are patched by, the patch event, the JSON Patch schema")
    func patches() async throws {
        let (document, _) = try await Self.document(Self.extendedYAML)
        for (path, matched) in [("/teams", "`slug`"), ("/rows", "`topic.id`, then `id`"), ("/lookup", "`id`")] {
            let operation = try #require(Self.at(document, "paths", path, "get") as? [String: Any])
            let updates = try #require(Self.parameters(operation).first { $0["name"] as? String == "updates" })
            #expect(updates["in"] as? String == "query")
            #expect(Self.at(updates, "schema", "enum") as? [String] == ["snapshot", "patch", ""], "empty counts as absent")
            #expect(Self.at(updates, "schema", "default") as? String == "snapshot")
            #expect((updates["description"] as? String)?.contains("items all carry an id (\(matched))") == true, "\(path)")
            let events = try #require(Self.at(operation, "responses", "200", "content", "text/event-stream", "schema", "oneOf") as? [[String: Any]])
            let patch = try #require(events.first { Self.at($0, "properties", "event", "const") as? String == "patch" })
            #expect(patch["required"] as? [String] == ["id"])
            #expect(Self.at(patch, "properties", "data", "contentSchema", "$ref") as? String == "#/components/schemas/JSONPatch")
            #expect(Self.codes(operation, "400")?.contains("invalid_parameter") == true)
        }
        let events = try #require(Self.at(document, "paths", "/events", "get") as? [String: Any])
        let variants = try #require(Self.at(events, "responses", "200", "content", "text/event-stream", "schema", "oneOf") as? [[String: Any]])
        let tagged = try #require(variants.first { Self.at($0, "properties", "event", "const") as? String == "patch" })
        #expect(Self.at(tagged, "properties", "data", "contentSchema", "required") as? [String] == ["resource", "patch"])
        let schema = try #require(Self.at(document, "components", "schemas", "JSONPatch") as? [String: Any])
        #expect(schema["type"] as? String == "array")
        let operations = try #require(Self.at(schema, "items", "oneOf") as? [[String: Any]])
        #expect(operations.compactMap { Self.at($0, "properties", "op", "const") as? String } == ["add", "remove", "replace", "move"])
    }

    @Test("with an admin token, the reload endpoints state the scheme and their 401")
    func adminToken() async throws {
        let yaml = ServiceHarness.groupsYAML(upstream: "http://127.0.0.1:9") + "\nserver:\n  adminToken: secret\n"
        let (document, _) = try await Self.document(yaml)
        #expect(Self.at(document, "components", "securitySchemes", "adminToken", "scheme") as? String == "bearer")
        let reload = try #require(Self.at(document, "paths", "/groups/reload", "post") as? [String: Any])
        #expect(reload["security"] as? [[String: [String]]] == [["adminToken": []]])
        #expect(Self.codes(reload, "401") == ["unauthorized"])
        #expect(Self.at(reload, "responses", "401", "headers", "WWW-Authenticate", "required") as? Bool == true)
        #expect(Self.at(reload, "responses", "403") == nil, "with a token, any client that has it may reload")
        #expect(Self.at(document, "paths", "/groups", "get", "security") == nil, "reading needs no token")
    }

    @Test("a reload declares its resource's parameters as optional query parameters that aim it, and answers {\"reloaded\":N}")
    func aimedReload() async throws {
        let (document, _) = try await Self.document(Self.extendedYAML)
        let reload = try #require(Self.at(document, "paths", "/teamgroups/reload", "post") as? [String: Any])
        let parameters = Self.parameters(reload)
        #expect(parameters.compactMap { $0["name"] as? String } == ["status", "team"])
        for parameter in parameters {
            #expect(parameter["in"] as? String == "query", "a path parameter of the GET is a query parameter of the reload")
            #expect(parameter["required"] == nil, "each optional: none given reloads every pipeline")
            #expect(Self.at(parameter, "schema", "default") == nil, "a reload fills in no default")
            #expect(Self.at(parameter, "schema", "minLength") as? Int == 1, "an empty value is refused")
        }
        let team = try #require(parameters.first { $0["name"] as? String == "team" })
        #expect(Self.at(team, "schema", "pattern") as? String == "^[a-z0-9-]{1,40}$")
        let status = try #require(parameters.first { $0["name"] as? String == "status" })
        #expect(Self.at(status, "schema", "enum") as? [String] == ["open", "done"])
        #expect((status["description"] as? String)?.contains("`open` when it gave none") == true)
        let answer = try #require(Self.at(reload, "responses", "202", "content", "application/json", "schema") as? [String: Any])
        #expect(answer["required"] as? [String] == ["reloaded"])
        #expect(Self.at(answer, "properties", "reloaded", "type") as? String == "integer")
        #expect(Self.at(answer, "properties", "reloaded", "minimum") as? Int == 0)
        #expect(Self.codes(reload, "400")?.contains("invalid_parameter") == true)

        let groups = try #require(Self.at(document, "paths", "/groups/reload", "post") as? [String: Any])
        #expect(Self.parameters(groups).isEmpty, "no parameters, nothing to aim at")
        #expect(Self.codes(groups, "400")?.contains("invalid_parameter") == false)
    }

    /// The value at `keys` in nested JSON objects.
    static func at(_ value: Any?, _ keys: String...) -> Any? {
        keys.reduce(value) { value, key in (value as? [String: Any])?[key] }
    }

    static func parameters(_ operation: [String: Any]) -> [[String: Any]] {
        operation["parameters"] as? [[String: Any]] ?? []
    }

    /// The error codes an operation's `status` response allows.
    static func codes(_ operation: [String: Any], _ status: String) -> [String]? {
        at(operation, "responses", status, "content", "application/json", "schema", "properties", "error", "properties", "code", "enum")
            as? [String]
    }
}
