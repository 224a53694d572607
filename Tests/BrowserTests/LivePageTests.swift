import Foundation
import Testing
import TributaryTesting

@Suite("The live page in a real browser")
struct LivePageTests {
    /// The demo configuration with quick refreshes, so a live update arrives within seconds.
    static var config: String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try! String(contentsOf: root.appendingPathComponent("config/tributary.yaml"), encoding: .utf8)
        return shipped.replacingOccurrences(of: "refreshInterval: 5s", with: "refreshInterval: 300ms")
    }

    /// Where the screenshot goes: `.build/screenshots/live-page.png` in the package.
    static var screenshot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/screenshots/live-page.png")
    }

    @Test("headless Chromium shows the groups live, loads more of a topic, and a screenshot is written")
    func livePage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tributary.yaml")
        try Self.config.write(to: config, atomically: true, encoding: .utf8)
        let service = try await DemoProcess.start(config: config.path)
        defer { service.stop() }

        let browser = try DevToolsBrowser()
        let target = try await browser.send("Target.createTarget", ["url": "about:blank"])
        let attached = try await browser.send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true])
        let session = try #require(attached["sessionId"] as? String)
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

        // "more" on the first topic: its row grows by one page (4 medias), through the stream's trigger.
        let grown = try await browser.evaluate("""
            new Promise((resolve) => {
              const count = () => document.querySelector('#rows .row')?.querySelectorAll('.media').length ?? 0;
              const ready = () => count() > 0 && typeof rowsStream === "string";
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

        let shot = try await browser.send("Page.captureScreenshot", ["format": "png"], session: session)
        let png = try #require(Data(base64Encoded: shot["data"] as? String ?? ""))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        try FileManager.default.createDirectory(at: Self.screenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: Self.screenshot)
    }
}

/// `tributary demo` as a child process on a free port.
final class DemoProcess: @unchecked Sendable {
    let port: UInt16
    private let process: Process

    private init(port: UInt16, process: Process) {
        self.port = port
        self.process = process
    }

    static func start(config: String) async throws -> DemoProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tributary")
        process.arguments = ["demo", "--config", config, "--listen", "127.0.0.1:0"]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TRIBUTARY_") }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let output = Observed("")
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.update { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
        guard await output.wait(timeout: .seconds(20), until: { $0.contains(" listening") && $0.contains("workers=") }),
              let match = output.value.firstMatch(of: /address=127\.0\.0\.1:(\d+) workers=/), let port = UInt16(match.1) else {
            process.terminate()
            throw DevToolsBrowser.Failure(description: "tributary demo did not start: \(output.value)")
        }
        return DemoProcess(port: port, process: process)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
