import Foundation
import Testing
import TributaryTesting

/// `deploy/grafana/tributary.json`, the operator's view, holds together: a Grafana dashboard
/// whose every query goes to the Prometheus data source picked at import, and whose every
/// metric is one the service really exports. A renamed metric, or a panel with a typo, fails
/// here instead of showing "No data" on the day it is needed.
@Suite("The Grafana dashboard: deploy/grafana/tributary.json")
struct DashboardTests {
    static let file = DeployFilesTests.deploy.appendingPathComponent("grafana/tributary.json")

    static func dashboard() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    /// Every panel, those inside collapsed rows included.
    static func panels(_ dashboard: [String: Any]) -> [[String: Any]] {
        let top = dashboard["panels"] as? [[String: Any]] ?? []
        return top + top.flatMap { $0["panels"] as? [[String: Any]] ?? [] }
    }

    /// Every PromQL expression the dashboard runs, by where it stands: each panel query, and
    /// the selector of each `label_values(selector, label)` variable.
    static func expressions(_ dashboard: [String: Any]) -> [(place: String, expression: String)] {
        var expressions: [(String, String)] = []
        for panel in panels(dashboard) {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                expressions.append(("panel \"\(panel["title"] ?? "")\"", target["expr"] as? String ?? ""))
            }
        }
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables where variable["type"] as? String == "query" {
            let query = (variable["query"] as? [String: Any])?["query"] as? String ?? variable["query"] as? String ?? ""
            if let match = query.wholeMatch(of: /label_values\((.+),\s*\w+\)/) {
                expressions.append(("variable $\(variable["name"] ?? "")", String(match.1)))
            }
        }
        return expressions
    }

    @Test("a Grafana dashboard (schema 39) whose every query goes to the Prometheus data source chosen at import")
    func shape() throws {
        let dashboard = try Self.dashboard()
        #expect(dashboard["schemaVersion"] as? Int == 39)
        #expect(dashboard["uid"] as? String == "tributary")
        #expect(dashboard["title"] as? String == "Tributary")
        let variables = try #require((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]])
        let source = try #require(variables.first { $0["type"] as? String == "datasource" })
        #expect(source["query"] as? String == "prometheus")
        let reference = "${\(try #require(source["name"] as? String))}"

        let panels = Self.panels(dashboard)
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(ids.count == panels.count && Set(ids).count == ids.count, "every panel has an id of its own")
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            let grid = try #require(panel["gridPos"] as? [String: Int], "\(title) has a place")
            #expect(grid["x"]! >= 0 && grid["w"]! > 0 && grid["x"]! + grid["w"]! <= 24, "\(title) fits the 24 columns")
            guard panel["type"] as? String != "row" else { continue }
            let targets = try #require(panel["targets"] as? [[String: Any]], "\(title) queries something")
            #expect(!targets.isEmpty, "\(title) queries something")
            for datasource in [panel["datasource"]] + targets.map({ $0["datasource"] }) {
                let datasource = datasource as? [String: String]
                #expect(datasource == ["type": "prometheus", "uid": reference], "\(title) asks the chosen Prometheus")
            }
            #expect(targets.allSatisfy { !($0["expr"] as? String ?? "").isEmpty }, "\(title) has PromQL")
        }
        #expect(Self.expressions(dashboard).count > panels.count / 2)
    }

    @Test("every metric the dashboard queries is in /metrics of a fleet replica that served JSON, a stream and an upstream failure")
    func metricsExist() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/broken" ? .json("{}", status: 500) : fixture.reply(to: request) ?? .json("{}", status: 404)
        }
        let service = try await ServiceProcess(yaml: """
            server: {workers: 1}
            upstreams:
              tasks: {url: "\(upstream.baseURL)", timeout: 5s, retries: 0}
            resources:
              groups:
                kind: list
                upstream: tasks
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
              broken:
                kind: list
                upstream: tasks
                list: {path: /broken, items: result, id: id}
                details: {path: "/broken/{id}", value: result}
            """, arguments: ["--redis", redis.url], environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret])
        #expect(await TestHTTP.ready(port: service.port), "in the fleet")
        #expect(try await TestHTTP.get(port: service.port, "/groups").status == 200)
        #expect(try await TestHTTP.get(port: service.port, "/broken").status == 502)
        let stream = try await SSEClient(port: service.port, path: "/groups")
        _ = try await stream.next(type: "snapshot")

        let exposition = MetricsExposition(try await TestHTTP.get(port: service.port, "/metrics").text)
        let expressions = Self.expressions(try Self.dashboard())
        for (place, expression) in expressions {
            let names = PromQL.metricNames(in: expression)
            #expect(!names.isEmpty, "\(place) selects a metric: \(expression)")
            for name in names {
                #expect(exposition.samples.contains(name), "\(place) queries \(name), not in /metrics")
                #expect(exposition.family(of: name) != nil, "\(place) queries \(name), of no family /metrics declares")
            }
        }
        let queried = Set(expressions.flatMap { PromQL.metricNames(in: $0.expression) }.compactMap(exposition.family))
        for family in ["tributary_http_requests_total", "tributary_http_request_duration_seconds",
                       "tributary_upstream_request_duration_seconds", "tributary_upstream_errors_total",
                       "tributary_upstream_circuit_state", "tributary_sse_subscribers", "tributary_live_pipelines",
                       "tributary_cluster_connected", "tributary_cluster_lease_held"] {
            #expect(queried.contains(family), "the dashboard shows \(family)")
        }

        stream.close()
        #expect(await service.terminate() == 0)
        redis.stop()
        await upstream.shutdown()
    }

    @Test("metric names are read out of PromQL: not functions, labels, keywords, numbers or Grafana variables")
    func promQLNames() {
        #expect(PromQL.metricNames(in: #"sum by (route, status) (rate(a_total{job=~"$job", route="x{y}"}[$__rate_interval]))"#) == ["a_total"])
        #expect(PromQL.metricNames(in: #"histogram_quantile(0.95, sum(rate(b_bucket[5m])) by (le)) > 0.5"#) == ["b_bucket"])
        #expect(PromQL.metricNames(in: #"sum(c == bool 1) / ignoring(x) group_left(y) d offset 1h or vector(0)"#) == ["c", "d"])
        #expect(PromQL.metricNames(in: #"max_over_time(e[${range}:1m]) and on(instance) f:rate5m"#) == ["e", "f:rate5m"])
        #expect(PromQL.metricNames(in: #"label_replace(g, "dst", "$1", "src", "(.*)")"#) == ["g"])
    }
}
