import Aggregation
import Foundation
import Testing
@testable import TributaryConfiguration
@testable import TributaryServer
import TributaryTesting

/// `resources.NAME.details.batch`, `.batchWindow`, `.cacheFor`, `.cacheBytes`: their
/// defaults, and every bad value refused at start and on reload, naming its key.
@Suite("Configuration of batched and cached details")
struct BatchConfigurationTests {
    /// A `groups` list resource whose `details` are `details` (a YAML flow mapping), with
    /// `parameters` declared.
    static func yaml(details: String, parameters: String = "{}") -> String {
        """
        upstreams:
          tasks: {url: "http://127.0.0.1:9"}
        resources:
          groups:
            kind: list
            upstream: tasks
            route: /groups
            parameters: \(parameters)
            list: {path: /groups, items: result, id: id}
            details: \(details)
        """
    }

    static func definition(_ details: String, parameters: String = "{}") throws -> ListResource.Definition {
        let configuration = try Configuration.load(yaml: Self.yaml(details: details, parameters: parameters), file: "t.yaml")
        guard case .list(let settings) = configuration.resources["groups"] else { throw ConfigurationError("t.yaml", "no list") }
        return settings.definition
    }

    static func problem(_ details: String, parameters: String = "{}") -> String? {
        do {
            _ = try Configuration.load(yaml: Self.yaml(details: details, parameters: parameters), file: "t.yaml")
            return nil
        } catch {
            return error.description
        }
    }

    @Test("defaults: no batch, no window, no cache (32 MiB when turned on); a batch's parameter ids, style comma, max 50, id id")
    func defaults() throws {
        let plain = try Self.definition(#"{path: "/groups/{id}/metadata", value: result}"#)
        #expect(plain.batch == nil)
        #expect(plain.batchWindow == .zero)
        #expect(plain.cacheFor == .zero)
        #expect(plain.cacheBytes == 32 * 1024 * 1024)
        let batched = try Self.definition("{batch: {path: /groups/metadata}}")
        #expect(batched.detailPath == nil, "details.path is optional with batch")
        #expect(batched.batch == DetailBatch(path: "/groups/metadata", parameter: "ids", style: .comma, max: 50, itemsAt: JSONPath(""), idMember: "id"))
        let full = try Self.definition(
            "{path: \"/t/{team}/g/{id}\", batch: {path: \"/t/{team}/m?x=1\", parameter: key, style: repeat, max: 7, items: data.items, id: uid}, batchWindow: 2ms, cacheFor: 30s, cacheBytes: 1024}",
            parameters: "{team: {in: query}}")
        #expect(full.detailPath?.description == "/t/{team}/g/{id}")
        #expect(full.batch == DetailBatch(path: "/t/{team}/m?x=1", parameter: "key", style: .repeat, max: 7, itemsAt: JSONPath("data.items"), idMember: "uid"))
        #expect(full.batchWindow == .milliseconds(2))
        #expect(full.cacheFor == .seconds(30))
        #expect(full.detailFreshness == .fixed(.seconds(30)))
        #expect(full.cacheBytes == 1024)
        let followed = try Self.definition(#"{path: "/groups/{id}/metadata", value: result, cacheFor: upstream}"#)
        #expect(followed.detailFreshness == .upstream, "cacheFor: upstream takes each answer's Cache-Control")
    }

    @Test("every bad value is refused, naming its key")
    func refused() {
        let cases: [(details: String, message: String)] = [
            ("{value: result}", "t.yaml: resources.groups.details.path: required"),
            ("{batch: {max: 5}}", "t.yaml: resources.groups.details.batch.path: required"),
            ("{batch: {path: /groups/metadata, max: 0}}", "t.yaml: resources.groups.details.batch.max: expected a whole number from 1 to 1000"),
            ("{batch: {path: /groups/metadata, style: sideways}}", "t.yaml: resources.groups.details.batch.style: expected one of comma, repeat"),
            (#"{batch: {path: "/groups/{id}/metadata"}}"#, "t.yaml: resources.groups.details.batch.path: {id} is for detail and page paths"),
            (#"{batch: {path: "/teams/{team}/metadata"}}"#, "t.yaml: resources.groups.details.batch.path: {team} is not a parameter of the resource"),
            ("{batch: {path: groups/metadata}}", "t.yaml: resources.groups.details.batch.path: expected a path starting with /"),
            ("{batch: {path: /m, parameter: \"\"}}", "t.yaml: resources.groups.details.batch.parameter: expected the name of a query parameter"),
            ("{batch: {path: /m, id: \"\"}}", "t.yaml: resources.groups.details.batch.id: expected the name of the member"),
            ("{batch: {path: /m, size: 5}}", "t.yaml: resources.groups.details.batch.size: unknown key"),
            ("{batch: /m}", "t.yaml: resources.groups.details.batch: expected a mapping of keys"),
            ("{batch: {path: /m}, batchWindow: soon}", "t.yaml: resources.groups.details.batchWindow: expected a duration"),
            (#"{path: "/g/{id}", batchWindow: 2ms}"#, "t.yaml: resources.groups.details.batchWindow: a window shares batch calls: it needs details.batch"),
            (#"{path: "/g/{id}", cacheFor: -1s}"#, "t.yaml: resources.groups.details.cacheFor: expected upstream or a duration"),
            (#"{path: "/g/{id}", cacheFor: Upstream}"#, "t.yaml: resources.groups.details.cacheFor: expected upstream or a duration"),
            (#"{path: "/g/{id}", cacheBytes: lots}"#, "t.yaml: resources.groups.details.cacheBytes: expected a whole number from 0 to 4294967296"),
            (#"{path: "/g/{id}", cacheSize: 5}"#, "t.yaml: resources.groups.details.cacheSize: unknown key"),
            (#"{path: "/g", batch: {path: /m}}"#, "t.yaml: resources.groups.details.path: must hold {id} exactly once"),
        ]
        for (details, message) in cases {
            let problem = Self.problem(details)
            #expect(problem?.hasPrefix(message) == true, "\(details): \(problem ?? "accepted")")
        }
    }

    @Test("a batched resource's OpenAPI operation says where its details come from, and item_missing when it fails whole")
    func openAPI() throws {
        let configuration = try Configuration.load(
            yaml: Self.yaml(details: "{batch: {path: /groups/metadata, max: 20}}").replacingOccurrences(of: "kind: list", with: "kind: list\n    onItemFailure: fail"),
            file: "t.yaml")
        let text = String(decoding: OpenAPIDocument(configuration).json.serialized, as: UTF8.self)
        #expect(text.contains("each item merged with its details from `/groups/metadata`, fetched up to 20 items a call"))
        #expect(text.contains("upstream_item_missing"))
    }

    @Test("a reload with a bad batch value changes nothing and names the key; a good one applies")
    func reload() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let valid = """
            server:
              workers: 2
            upstreams:
              tasks: {url: "\(upstream.baseURL)", timeout: 10s, retries: 0}
            resources:
              groups:
                kind: list
                upstream: tasks
                list: {path: /groups, items: result, id: id}
                details: {batch: {path: /groups/metadata, max: 3, items: result}}

            """
        let service = try await ServiceProcess(yaml: valid)
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path == "/groups/metadata" }.count == 2)

        try service.reload(valid.replacingOccurrences(of: "max: 3", with: "max: none"))
        #expect(await service.output.wait(timeout: .seconds(20)) { $0.contains("configuration reload failed") })
        #expect(service.output.value.contains("resources.groups.details.batch.max"))
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path == "/groups/metadata" }.count == 4, "still max 3")

        try service.reload(valid.replacingOccurrences(of: "max: 3", with: "max: 4"))
        #expect(await service.output.wait(timeout: .seconds(20)) { $0.contains("configuration reloaded") })
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path == "/groups/metadata" }.count == 5, "now max 4: one call")
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }
}
