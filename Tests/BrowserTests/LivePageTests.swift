import Foundation
import Glibc
import Testing
import TributaryTesting

@Suite("The live page in a real browser")
struct LivePageTests {
    /// The demo configuration with quick refreshes, so a live update arrives within seconds,
    /// a slow search debounce, so the test's timing has a wide margin (see the test), and a
    /// search upstream that may take a minute: the test holds its answers, and a busy
    /// machine's pace must not turn one into a timeout.
    static var config: String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try! String(contentsOf: root.appendingPathComponent("config/tributary.yaml"), encoding: .utf8)
        let searchUpstream = "  search:\n    url: http://127.0.0.1:8081\n    timeout: 5s"
        precondition(shipped.contains(searchUpstream), "config/tributary.yaml's search upstream changed: update LivePageTests.config")
        return shipped.replacingOccurrences(of: "refreshInterval: 5s", with: "refreshInterval: 300ms")
            .replacingOccurrences(of: "debounce: 300ms", with: "debounce: 2s")
            .replacingOccurrences(of: searchUpstream, with: "  search:\n    url: http://127.0.0.1:8081\n    timeout: 60s")
    }

    /// Where the screenshot goes: `.build/screenshots/live-page.png` in the package.
    static var screenshot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/screenshots/live-page.png")
    }

    @Test("headless Chromium shows every live view over one /events connection: groups live, more of a topic, search as you type")
    func livePage() async throws {
        // The search upstream answers "swift" at once, "swi" once the test has typed the "f" of
        // "swif", and never "swif". The service searches a query once it stayed unchanged for
        // 2 s. So "swi"'s answer lands after "swif" is typed, however busy the machine (and
        // must be labelled "swi", not "swif"), and "swif"'s search is still running when
        // "swift"'s starts, whenever that is: it must be cancelled (the upstream sees its
        // call closed). No answer waits on a clock.
        let typedSwif = Observed(false)
        let searchUpstream = try await ScriptedUpstream.start { request in
            switch request.query["q"] ?? "" {
            case "swi": UpstreamReply.json(SearchFixture.json(for: "swi")).held(until: { _ in typedSwif.value })
            case "swif": .hang
            case let query: UpstreamReply.json(SearchFixture.json(for: query))
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tributary.yaml")
        try Self.config.write(to: config, atomically: true, encoding: .utf8)
        let service = try await DemoProcess.start(config: config.path, upstreams: ["search=\(searchUpstream.baseURL)"])
        defer { service.stop() }

        let browser = try DevToolsBrowser(windowSize: "1200,1200")
        let target = try await browser.send("Target.createTarget", ["url": "about:blank"])
        let attached = try await browser.send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true])
        let session = try #require(attached["sessionId"] as? String)
        // Every request the page makes, as the browser's network stack sees it.
        try await browser.send("Network.enable", session: session)
        // Answered once the new document is committed: evaluating after it cannot race the navigation.
        try await browser.send("Page.navigate", ["url": "http://127.0.0.1:\(service.port)/"], session: session)

        // Resolves once the page has rendered a second group snapshot: a live update.
        let updates = try await browser.evaluate("""
            new Promise((resolve) => {
              const start = () => {
                const done = () => Number(document.body.dataset.updates) >= 2 && (resolve(document.body.dataset.state + " " + document.body.dataset.updates), true);
                if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe(document.body, { attributes: true });
              };
              document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", start) : start();
            })
            """, session: session)
        #expect((updates as? String)?.hasPrefix("live ") == true, "page state: \(String(describing: updates))")
        #expect(try await browser.evaluate("document.querySelectorAll('#groups tr').length", session: session) as? Int == 8)

        // The parameterized resource (the shipped teamgroups, team core) on the same
        // connection: its table holds what GET /teams/core/groups answers.
        let team = try await TestHTTP.get(port: service.port, "/teams/core/groups")
        let teamNames = try #require(try team.json() as? [[String: Any]]).compactMap { $0["name"] as? String }
        let shownNames = try await browser.evaluate("""
            new Promise((resolve) => {
              const names = () => [...document.querySelectorAll('#param-groups tr td:first-child')].map((cell) => cell.textContent);
              const done = () => names().length > 0 && (resolve(names()), true);
              if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe($("param-groups"), { childList: true });
            })
            """, session: session) as? [String]
        #expect(shownNames == teamNames)
        #expect(!teamNames.isEmpty && teamNames.allSatisfy { $0.contains("(core, open)") })

        // "more" on the first topic: its row grows by one page (4 medias), through the trigger
        // of the rows stream announced on the one connection.
        let grown = try await browser.evaluate("""
            new Promise((resolve) => {
              const count = () => document.querySelector('#rows .row')?.querySelectorAll('.media').length ?? 0;
              const ready = () => count() > 0 && typeof streams.rows === "string";
              const click = () => {
                const before = count();
                new MutationObserver((_, observer) => { if (count() > before) { observer.disconnect(); resolve([before, count()]); } })
                  .observe(document.getElementById('rows'), { childList: true, subtree: true });
                document.querySelector('#rows .row button').click();
              };
              if (ready()) click();
              else new MutationObserver((_, observer) => { if (ready()) { observer.disconnect(); click(); } })
                .observe(document.getElementById('rows'), { childList: true, subtree: true });
            })
            """, session: session)
        #expect(grown as? [Int] == [4, 8])

        // Search: every result set the page shows is recorded with the query it is labelled
        // with and the text in the box at that moment.
        try await browser.evaluate("""
            window.shown = [];
            new MutationObserver(() => {
              const list = document.getElementById('results');
              shown.push([list.dataset.query, [...list.querySelectorAll('.name')].map((name) => name.textContent), document.getElementById('q').value]);
            }).observe(document.getElementById('results'), { childList: true, attributes: true, attributeFilter: ["data-query"] });
            """, session: session)
        // Every resource's stream was announced before the first snapshot.
        #expect(try await browser.evaluate("typeof streams.search", session: session) as? String == "string")
        let box = try #require(try await browser.evaluate("""
            (() => { const box = document.getElementById('q').getBoundingClientRect(); return [box.x + box.width / 2, box.y + box.height / 2]; })()
            """, session: session) as? [Double])
        try await browser.click(x: box[0], y: box[1], session: session)
        #expect(try await browser.evaluate("document.activeElement.id", session: session) as? String == "q")
        /// Resolves, once the page shows results other than `previous`, to the query they are
        /// labelled with, the label, and their names.
        func results(after previous: [String]) async throws -> [String] {
            let previous = String(decoding: try JSONSerialization.data(withJSONObject: previous), as: UTF8.self)
            return try #require(try await browser.evaluate("""
                new Promise((resolve) => {
                  const list = document.getElementById('results');
                  const names = () => [...list.querySelectorAll('.name')].map((name) => name.textContent);
                  const done = () => names().length > 0 && JSON.stringify(names()) !== JSON.stringify(\(previous))
                    && (resolve([list.dataset.query, document.getElementById('search-for').textContent].concat(names())), true);
                  if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe(list, { childList: true });
                })
                """, session: session) as? [String])
        }

        try await browser.type("swi", session: session)
        #expect(await searchUpstream.records.wait(timeout: .seconds(10)) { $0.contains { $0.query["q"] == "swi" } })
        try await browser.type("f", session: session)
        typedSwif.update { $0 = true }
        try await searchUpstream.releaseHeld()
        // "swi"'s late answer is shown as what it is, while "swif" is on its way.
        let late = SearchFixture.names(for: "swi")
        #expect(try await results(after: []) == ["swi", "1 result for “swi” · searching “swif”…"] + late)
        #expect(await searchUpstream.records.wait(timeout: .seconds(10)) { $0.contains { $0.query["q"] == "swif" } })
        try await browser.type("t", session: session)
        let swift = SearchFixture.names(for: "swift")
        #expect(try await results(after: late) == ["swift", "\(swift.count) results for “swift”"] + swift)
        #expect(try await browser.evaluate("document.getElementById('q').value", session: session) as? String == "swift")

        // "swif"'s search was cancelled when "swift"'s started: the service closed its call...
        #expect(await searchUpstream.records.wait(timeout: .seconds(15)) { $0.allSatisfy { !$0.inFlight } })
        let searched = searchUpstream.requests.map { [$0.query["q"] ?? "", "\($0.closedByClient)"] }
        #expect(searched == [["swi", "false"], ["swif", "true"], ["swift", "false"]])
        // ...and, two group snapshots later on the same connection (so anything sent before
        // them has been shown), the page has shown "swi"'s results and then "swift"'s, each
        // labelled with its own query, and never "swif"'s.
        try await browser.evaluate("""
            new Promise((resolve) => {
              const until = Number(document.body.dataset.updates) + 2;
              new MutationObserver((_, observer) => { if (Number(document.body.dataset.updates) >= until) { observer.disconnect(); resolve(true); } })
                .observe(document.body, { attributes: true });
            })
            """, session: session)
        let history = try #require(try await browser.evaluate("shown.filter(([, names]) => names.length > 0)", session: session) as? [[Any]])
        let described = history.map { entry in "\(entry[0]): \(entry[1]) while the box held \(entry[2])" }
        #expect(described == [
            "swi: \(SearchFixture.names(for: "swi")) while the box held swif",
            "swift: \(swift) while the box held swift",
        ])

        // One connection: the page opened one event stream, /events for all three views, and
        // it is the only request still open; every "more" and input request has finished.
        try await browser.waitForEvents { events in
            let requests = NetworkLog(events)
            return requests.sent.contains { $0.method == "PUT" } && requests.open.allSatisfy { $0.type == "EventSource" }
        }
        let requests = NetworkLog(browser.events)
        let streams = requests.sent.filter { $0.type == "EventSource" }
        #expect(streams.map(\.path) == [
            "/events?resource=groups&resource=rows&resource=search&updates=patch&progressive=true"
                + "&groups.fields=id,name,taskCount,lastUpdated&rows.fields=topic.id,topic.title,medias.id,medias.title"
                + "&resource=teamgroups&teamgroups.team=core",
        ])
        #expect(requests.open.map(\.path) == streams.map(\.path))
        #expect(requests.sent.contains { $0.method == "POST" && $0.path.hasPrefix("/streams/") })

        let shot = try await browser.send("Page.captureScreenshot", ["format": "png"], session: session)
        let png = try #require(Data(base64Encoded: shot["data"] as? String ?? ""))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        try FileManager.default.createDirectory(at: Self.screenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: Self.screenshot)
        await searchUpstream.shutdown()
    }

    @Test("the page applies each group patch with its own RFC 6902 function: its table equals a JSON GET after every change")
    func patchedTable() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 30))
        let tasks = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tributary.yaml")
        // Groups change only when the test reloads them: one change, one event.
        let shipped = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/tributary.yaml"), encoding: .utf8)
        try shipped.replacingOccurrences(of: "refreshInterval: 5s", with: "refreshInterval: 1h").write(to: config, atomically: true, encoding: .utf8)
        let service = try await DemoProcess.start(config: config.path, upstreams: ["tasks=\(tasks.baseURL)"])
        defer { service.stop() }

        let browser = try DevToolsBrowser()
        let target = try await browser.send("Target.createTarget", ["url": "about:blank"])
        let attached = try await browser.send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true])
        let session = try #require(attached["sessionId"] as? String)
        try await browser.send("Page.navigate", ["url": "http://127.0.0.1:\(service.port)/"], session: session)

        /// Resolves once the page has applied more than `count` group patches.
        func patches(after count: Int) async throws {
            try await browser.evaluate("""
                new Promise((resolve) => {
                  const done = () => Number(document.body.dataset.patches) > \(count) && (resolve(true), true);
                  if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe(document.body, { attributes: true });
                })
                """, session: session)
        }
        /// The page's table, and a JSON GET's groups, as rows of name, count and date.
        func compared() async throws -> (page: [[String]], served: [[String]], version: String, etag: String) {
            let page = try #require(try await browser.evaluate("""
                [...document.querySelectorAll('#groups tr')].map((row) => [...row.children].map((cell) => cell.textContent))
                """, session: session) as? [[String]])
            let version = try #require(try await browser.evaluate("document.getElementById('version').textContent", session: session) as? String)
            let answer = try await TestHTTP.get(port: service.port, "/groups")
            let groups = try #require(try answer.json() as? [[String: Any]])
            let served = groups.map { group in ["name", "taskCount", "lastUpdated"].map { "\(group[$0] ?? "")" } }
            return (page, served, version, answer.header("ETag") ?? "")
        }

        // The first document, whole and complete (the page's script has run).
        try await browser.evaluate("""
            new Promise((resolve) => {
              const start = () => {
                const done = () => Number(document.body.dataset.updates) >= 1 && document.body.dataset.pending === "0" && (resolve(true), true);
                if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe(document.body, { attributes: true });
              };
              document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", start) : start();
            })
            """, session: session)
        // The first document, complete (the page opens its stream with progressive=true: its
        // details may have come as a patch of their own).
        let first = try await compared()
        #expect(first.page == first.served && first.page.count == 30)
        let base = Int(try #require(try await browser.evaluate("document.body.dataset.patches", session: session) as? String)) ?? 0

        // The page's applyPatch, on examples of RFC 6902's appendix A and on patches that must fail.
        let examples = try #require(try await browser.evaluate("""
            (() => {
              const run = (document, patch) => { try { return JSON.stringify(applyPatch(document, patch)); } catch (error) { return "error"; } };
              const kept = { a: [1, 2] };
              const failed = run(kept, [{ op: "remove", path: "/a/0" }, { op: "remove", path: "/b" }]);
              return [
                run({ foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }]),
                run({ foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }]),
                run({ baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }]),
                run({ foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }]),
                run({ baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }]),
                run({ foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } }, [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }]),
                run({ foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }]),
                run({ baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }]),
                run({ baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }]),
                run({ foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }]),
                run({ "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }, { op: "replace", path: "/~1", value: 1 }]),
                run({ foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }]),
                run({ foo: [1] }, [{ op: "add", path: "/foo/01", value: 2 }]),
                run({}, [{ op: "add", path: "/__proto__", value: 1 }]),
                failed + " " + JSON.stringify(kept),
              ];
            })()
            """, session: session) as? [String])
        #expect(examples == [
            #"{"foo":"bar","baz":"qux"}"#, #"{"foo":["bar","qux","baz"]}"#, #"{"foo":"bar"}"#, #"{"foo":["bar","baz"]}"#,
            #"{"baz":"boo","foo":"bar"}"#, #"{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}"#,
            #"{"foo":["all","cows","eat","grass"]}"#, #"{"baz":"qux","foo":["a",2,"c"]}"#, "error", "error", #"{"/":1,"~1":10}"#,
            #"{"foo":["bar",["abc","def"]]}"#, "error", #"{"__proto__":1}"#, #"error {"a":[1,2]}"#,
        ])

        let changes: [(String, (inout TaskGroupsFixture) -> Void)] = [
            ("a count", { $0.groups[7].taskCount = 999 }),
            ("an item removed", { $0.groups.remove(at: 20) }),
            ("an item added", { $0.groups.insert(.init(id: "new", name: "Added", taskCount: 5, lastUpdated: "2026-11-30T00:00:00Z"), at: 3) }),
            ("two items swapped", { $0.groups.swapAt(10, 25) }),
            ("a name and a date", {
                $0.groups[0].name = #"Renamed "zero" ✓ / ~1"#
                $0.groups[0].lastUpdated = "2026-12-01T09:30:00Z"
            }),
        ]
        for (index, (what, change)) in changes.enumerated() {
            fixture.update(change)
            #expect(try await TestHTTP.request(port: service.port, "POST", "/groups/reload").status == 202)
            try await patches(after: base + index)
            let now = try await compared()
            #expect(now.page == now.served, "after \(what)")
            #expect(now.version.contains(now.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))), "after \(what): \(now.version), ETag \(now.etag)")
        }
        #expect(try await browser.evaluate("document.body.dataset.patches", session: session) as? String == "\(base + 5)")
        await tasks.shutdown()
    }
}

extension LivePageTests {
    /// Where the progressive screenshot goes: `.build/screenshots/live-page-progressive.png`.
    static var progressiveScreenshot: URL {
        screenshot.deletingLastPathComponent().appendingPathComponent("live-page-progressive.png")
    }

    @Test("a slow detail: the page shows the list at once, that group pending, then fills it in, as a JSON GET has it")
    func pendingFillsIn() async throws {
        let fixture = TaskGroupsFixture(count: 8)
        let slow = fixture.groups[2]
        let released = Observed(false)
        // The groups, and team core's (the page's parameterized table) the same.
        let tasks = try await ScriptedUpstream.start { request in
            let path = request.path.hasPrefix("/teams/core/") ? String(request.path.dropFirst("/teams/core".count)) : request.path
            if path == "/groups" { return .json(fixture.listJSON) }
            guard let group = fixture.group(forMetadataPath: path) else { return .json("{}", status: 404) }
            let reply = UpstreamReply.json(fixture.metadataJSON(for: group))
            return group.id == slow.id ? reply.held { _ in released.value } : reply
        }
        let service = try await DemoProcess.start(config: Self.shippedConfigPath, upstreams: ["tasks=\(tasks.baseURL)"])
        defer { service.stop() }
        let browser = try DevToolsBrowser(windowSize: "1200,900")
        let target = try await browser.send("Target.createTarget", ["url": "about:blank"])
        let attached = try await browser.send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true])
        let session = try #require(attached["sessionId"] as? String)
        try await browser.send("Page.navigate", ["url": "http://127.0.0.1:\(service.port)/"], session: session)

        /// Resolves once the page's table shows `pending` groups waiting for their details.
        func pendingShown(_ pending: Int) async throws {
            try await browser.evaluate("""
                new Promise((resolve) => {
                  const start = () => {
                    const done = () => document.body.dataset.pending === "\(pending)" && (resolve(true), true);
                    if (!done()) new MutationObserver((_, observer) => { if (done()) observer.disconnect(); }).observe(document.body, { attributes: true });
                  };
                  document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", start) : start();
                })
                """, session: session)
        }
        func table() async throws -> [[String]] {
            try #require(try await browser.evaluate("""
                [...document.querySelectorAll('#groups tr')].map((row) => [row.className, ...[...row.children].map((cell) => cell.textContent)])
                """, session: session) as? [[String]])
        }

        // The other groups' details answer at once; the slow one's is held: one group pending.
        try await pendingShown(1)
        let partial = try await table()
        #expect(partial.count == 8)
        #expect(partial[2] == ["pending", slow.name, "…", "loading"])
        for (index, row) in partial.enumerated() where index != 2 {
            let group = fixture.groups[index]
            #expect(Array(row.dropFirst()) == [group.name, "\(group.taskCount)", group.lastUpdated])
        }
        let shot = try await browser.send("Page.captureScreenshot", ["format": "png"], session: session)
        let png = try #require(Data(base64Encoded: shot["data"] as? String ?? ""))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        try FileManager.default.createDirectory(at: Self.progressiveScreenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: Self.progressiveScreenshot)

        released.update { $0 = true }
        try await tasks.releaseHeld()
        try await pendingShown(0)
        let complete = try await table()
        let served = try #require(try await TestHTTP.get(port: service.port, "/groups").json() as? [[String: Any]])
        #expect(complete.map { Array($0.dropFirst()) } == served.map { group in ["name", "taskCount", "lastUpdated"].map { "\(group[$0] ?? "")" } })
        #expect(!complete.contains { $0[0] == "pending" })
        await tasks.shutdown()
    }

    /// The shipped configuration, its path in the package.
    static var shippedConfigPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/tributary.yaml").path
    }
}

/// The page's requests as the DevTools `Network` domain reported them.
struct NetworkLog {
    struct Request {
        let id: String
        let method: String
        /// Path and query.
        let path: String
        /// The resource type: `EventSource`, `Fetch`, `Document`, …
        let type: String
    }

    /// Every request sent, in order.
    let sent: [Request]
    /// The requests neither finished nor failed yet.
    let open: [Request]

    init(_ events: [[String: Any]]) {
        var sent: [Request] = []
        var ended: Set<String> = []
        for event in events {
            let params = event["params"] as? [String: Any] ?? [:]
            let id = params["requestId"] as? String ?? ""
            switch event["method"] as? String {
            case "Network.requestWillBeSent":
                let request = params["request"] as? [String: Any] ?? [:]
                let url = URLComponents(string: request["url"] as? String ?? "")
                sent.append(Request(id: id, method: request["method"] as? String ?? "", path: (url?.percentEncodedPath ?? "") + (url?.percentEncodedQuery.map { "?" + $0 } ?? ""),
                                    type: params["type"] as? String ?? ""))
            case "Network.loadingFinished", "Network.loadingFailed":
                ended.insert(id)
            default:
                break
            }
        }
        self.sent = sent
        open = sent.filter { !ended.contains($0.id) }
    }
}

/// What the scripted search upstream answers: a few repositories for "swift", and for any
/// other query one whose name says which query it answers.
enum SearchFixture {
    static let swift: [(owner: String, name: String, description: String, stars: Int)] = [
        ("swiftlang", "swift", "The Swift Programming Language", 69000),
        ("apple", "swift-nio", "Event-driven network application framework for high performance protocol servers & clients", 8100),
        ("OpenCombine", "OpenCombine", "Open source implementation of Apple's Combine framework for processing values over time", 2800),
        ("hummingbird-project", "hummingbird", "Lightweight, flexible HTTP server framework written in Swift", 1300),
    ]

    static func names(for query: String) -> [String] {
        query == "swift" ? swift.map { "\($0.owner)/\($0.name)" } : ["late/\(query)"]
    }

    static func json(for query: String) -> String {
        let items = query == "swift"
            ? swift.enumerated().map { index, repository in
                #"{"id":\#(index + 1),"name":"\#(repository.name)","fullName":"\#(repository.owner)/\#(repository.name)","description":"\#(repository.description)","stargazersCount":\#(repository.stars)}"#
            }
            : [#"{"id":99,"name":"\#(query)","fullName":"late/\#(query)","description":"answers \#(query), and late","stargazersCount":0}"#]
        return #"{"items":["# + items.joined(separator: ",") + "]}"
    }
}

/// `tributary demo` as a child process on a free port.
final class DemoProcess: Sendable {
    let port: UInt16
    private let process: SpawnedProcess

    private init(port: UInt16, process: SpawnedProcess) {
        self.port = port
        self.process = process
    }

    /// `upstreams` (`NAME=URL`) take the place of the demo upstream for those names.
    static func start(config: String, upstreams: [String] = []) async throws -> DemoProcess {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tributary")
        let process = try SpawnedProcess(
            binary.path, ["demo", "--config", config, "--listen", "127.0.0.1:0"] + upstreams.flatMap { ["--upstream", $0] },
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TRIBUTARY_") })
        let output = process.output
        guard await output.wait(timeout: .seconds(20), until: { $0.contains(" listening") && $0.contains("workers=") }),
              let match = output.value.firstMatch(of: /address=127\.0\.0\.1:(\d+) workers=/), let port = UInt16(match.1) else {
            process.signal(SIGKILL)
            throw DevToolsBrowser.Failure(description: "tributary demo did not start: \(output.value)")
        }
        return DemoProcess(port: port, process: process)
    }

    /// Asks it to stop (it ends its streams and exits on its own; nothing here waits for it).
    func stop() {
        process.signal(SIGTERM)
    }
}
