import Foundation
import Glibc
import TributaryTesting

/// Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// commands on the child's fd 3, answers and events on its fd 4, each a JSON text ending in
/// NUL), so the test needs no WebSocket client. Waiting for an answer suspends the task (see
/// ``Poller``): a page can take seconds to answer, and a test must not hold a thread of the
/// cooperative pool that long. Events (messages without an `id`, e.g. the `Network` domain's)
/// are kept in ``events`` for the test to read.
final class DevToolsBrowser {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let pid: pid_t
    private let commands: Int32
    private let answers: Int32
    private let profile: URL
    private var pending: [UInt8] = []
    private var nextID = 0
    /// Every event received so far, oldest first: `{"method","params","sessionId"}`.
    private(set) var events: [[String: Any]] = []

    /// Starts Chromium (Debian's `chromium`) with a fresh profile.
    init(windowSize: String = "1200,900") throws {
        guard let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure(description: "Chromium is not installed (apt-get install chromium)")
        }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-chromium-\(UUID().uuidString)")
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw Failure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of the test process goes to the browser: a socket it kept open would
        // outlive its close here, and the server at its other end would wait for a reset that
        // never comes.
        closeInheritedDescriptors(&actions, from: 5)
        let arguments = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--remote-debugging-pipe", "--window-size=\(windowSize)",
                         "--user-data-dir=\(profile.path)", "about:blank"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, chromium, &actions, nil, argv, environ)
        close(toBrowser[0])
        close(fromBrowser[1])
        guard spawned == 0 else { throw Failure(description: "posix_spawn chromium: \(String(cString: strerror(spawned)))") }
        pid = child
        commands = toBrowser[1]
        answers = fromBrowser[0]
    }

    deinit {
        close(commands)
        close(answers)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(at: profile)
    }

    /// Sends a command and returns its `result`, skipping events; fails after `timeout`.
    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Duration = .seconds(30)) async throws -> [String: Any] {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        let data = try JSONSerialization.data(withJSONObject: message) + [0]
        try data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(commands, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { throw Failure(description: "writing to Chromium failed") }
                offset += written
            }
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let answer = try await nextMessage(until: deadline)
            guard answer["id"] as? Int == nextID else {
                if answer["method"] != nil { events.append(answer) }
                continue
            }
            if let error = answer["error"] as? [String: Any] { throw Failure(description: "\(method): \(error)") }
            return answer["result"] as? [String: Any] ?? [:]
        }
    }

    /// Evaluates `expression` in the page (awaiting it if it is a promise) and returns its value.
    @discardableResult
    func evaluate(_ expression: String, session: String, timeout: Duration = .seconds(30)) async throws -> Any? {
        let result = try await send("Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true],
                                    session: session, timeout: timeout)
        if let exception = result["exceptionDetails"] { throw Failure(description: "the page threw: \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Reads events until `condition` holds for ``events``; fails after `timeout`.
    func waitForEvents(timeout: Duration = .seconds(10), until condition: ([[String: Any]]) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(events) {
            let message = try await nextMessage(until: deadline)
            if message["method"] != nil { events.append(message) }
        }
    }

    /// A left click at (`x`, `y`) in the page's viewport, as a mouse makes it.
    func click(x: Double, y: Double, session: String) async throws {
        for type in ["mouseMoved", "mousePressed", "mouseReleased"] {
            try await send("Input.dispatchMouseEvent", ["type": type, "x": x, "y": y, "button": "left", "clickCount": 1], session: session)
        }
    }

    /// Types `text` (lower-case letters a to z) into whatever has the focus, one key down and
    /// up per letter, as a keyboard does: the page sees `keydown`, `input` and `keyup` events.
    func type(_ text: String, session: String) async throws {
        for letter in text {
            guard let code = letter.asciiValue, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(code) else {
                throw Failure(description: "type(_:) knows the keys a to z, not \"\(letter)\"")
            }
            let key: [String: Any] = ["key": String(letter), "code": "Key\(letter.uppercased())", "windowsVirtualKeyCode": Int(code) - 32]
            try await send("Input.dispatchKeyEvent", key.merging(["type": "keyDown", "text": String(letter)]) { $1 }, session: session)
            try await send("Input.dispatchKeyEvent", key.merging(["type": "keyUp"]) { $1 }, session: session)
        }
    }

    private func nextMessage(until deadline: ContinuousClock.Instant) async throws -> [String: Any] {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let message = Data(pending[..<end])
                pending.removeSubrange(...end)
                return (try JSONSerialization.jsonObject(with: message)) as? [String: Any] ?? [:]
            }
            guard try await Poller.shared.wait(for: .readable, on: answers, until: deadline) else {
                throw Failure(description: "Chromium did not answer in time")
            }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(answers, &chunk, chunk.count)
            guard count > 0 else { throw Failure(description: "Chromium closed its pipe") }
            pending += chunk[..<count]
        }
    }
}
