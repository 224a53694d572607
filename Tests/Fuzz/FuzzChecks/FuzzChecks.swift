import Aggregation
import Foundation
import HTTPCore
import HTTPServer
import UpstreamClient
import TributaryConfiguration
import TributaryServer
import TributaryTesting

/// What each fuzz target checks, as plain functions: the libFuzzer executables call them on
/// generated inputs, and `FuzzCorpusTests` replays the committed corpus through them, so a
/// crash found once stays fixed. Each check stops the process (`precondition`) when an
/// invariant breaks; inputs that are merely invalid must be refused, never crash.
public enum FuzzChecks {
    /// Upstream JSON: parsing never crashes; what we serialize parses back to the same
    /// document, byte for byte stable, on one line; merging an item with its details keeps
    /// the item's members first and adds only the missing ones. Parsed keeping the objects'
    /// text, the document is equal and writes the same bytes, and so does a merge (spliced
    /// texts must be what serializing the merged tree would write). A document refused is
    /// refused the same way, at the same byte, whether object text is kept or not, and whether
    /// the document's own object keeps its text alone or with its members (keeping it checks
    /// objects with a scanner of its own before the parser's full parse); except a document
    /// refused for the memory its values need, which kept text (its objects not built) may
    /// accept.
    public static func json(_ bytes: UnsafeBufferPointer<UInt8>) {
        let document: JSON
        do {
            document = try JSON(parsing: bytes)
        } catch {
            // Objects kept as text are not built: they may fit where the whole tree did not.
            if error.exceedsWorkingMemory { return }
            for keeping in [JSON.KeptText.objects, .objectsInsideTheDocument] {
                do {
                    _ = try JSON(parsing: Array(bytes), keeping: keeping)
                    preconditionFailure("keeping text (\(keeping)) accepted a document the parser refuses (\(error))")
                } catch let keptError {
                    precondition(keptError == error, "keeping text (\(keeping)) refused differently: \(keptError), not \(error)")
                }
            }
            return
        }
        let text = document.serialized
        guard let reparsed = try? JSON(parsing: text) else { preconditionFailure("our own JSON does not parse: \(text)") }
        precondition(reparsed == document, "serializing changed the document")
        precondition(reparsed.serialized == text, "serializing is not stable")
        precondition(!text.contains(0x0A) && !text.contains(0x0D), "serialized JSON holds a line break")
        guard let kept = try? JSON(parsing: Array(bytes), keepingObjectText: true) else { preconditionFailure("keeping text refused a document") }
        precondition(kept == document && document == kept, "keeping text changed the document")
        precondition(kept.serialized == text, "a kept text differs from the serialized tree")
        guard let keptInside = try? JSON(parsing: Array(bytes), keeping: .objectsInsideTheDocument) else {
            preconditionFailure("keeping the text of objects inside refused a document")
        }
        precondition(keptInside == document && keptInside.serialized == text, "keeping the text of objects inside changed the document")
        // Members read from a kept object's text (names compared in place, strings and objects
        // read without a parser) are the ones the parsed tree holds.
        for member in document.objectValue?.prefix(32) ?? [] {
            precondition(kept[member.key] == document[member.key], "a member read from kept text differs")
        }
        guard case .array(let pair) = document, pair.count == 2 else { return }
        if let keptPair = kept.arrayValue, let spliced = ListResource.merge(keptPair[0], details: keptPair[1]) {
            precondition(spliced.serialized == ListResource.merge(pair[0], details: pair[1])?.serialized, "a spliced merge differs")
        }
        guard let merged = ListResource.merge(pair[0], details: pair[1]) else {
            precondition(pair[0].objectValue == nil || pair[1].objectValue == nil, "merging two objects failed")
            return
        }
        let item = pair[0].objectValue!
        let members = merged.objectValue!
        precondition(members.prefix(item.count).elementsEqual(item) { $0.key == $1.key && $0.value == $1.value },
                     "the item's members are not kept first")
        let added = members.dropFirst(item.count)
        precondition(added.allSatisfy { extra in !item.contains { $0.key == extra.key } }, "a detail overwrote an item member")
    }

    /// Configuration: any text is loaded or refused with a message naming where; a loaded
    /// configuration is consistent.
    public static func configuration(_ bytes: UnsafeBufferPointer<UInt8>) {
        let yaml = String(decoding: bytes, as: UTF8.self)
        do {
            let configuration = try Configuration.load(yaml: yaml, file: "fuzz.yaml")
            precondition(configuration.server.workers >= 1)
            for (name, resource) in configuration.resources {
                precondition(configuration.upstreams[resource.upstream] != nil, "resource \(name) names a missing upstream")
            }
        } catch {
            precondition(!error.location.isEmpty && !error.problem.isEmpty, "an error that names nothing")
        }
    }

    /// Stream control requests: paths, ids and query strings from clients. Stream ids are
    /// exactly 32 lowercase hex digits; routing never crashes, and parameters survive being
    /// encoded into a path and routed again; percent-encoding round-trips.
    public static func streamControl(_ bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let id = StreamID(text) {
            precondition(id.description == text && text.utf8.count == 32, "a malformed stream id was accepted")
        }
        _ = QueryString.parse(text)
        precondition(QueryString.percentDecoded(QueryString.percentEncoded(text)) == text, "percent-encoding does not round-trip")
        for method in [HTTPMethod.get, .post, .put] {
            guard case .found(let pattern, let parameters) = router.match(method, path: text) else { continue }
            var rebuilt = pattern
            for (name, value) in parameters {
                rebuilt = rebuilt.replacingOccurrences(of: "{\(name)}", with: QueryString.percentEncoded(value))
            }
            guard case .found(_, let again) = router.match(method, path: rebuilt) else { preconditionFailure("\(rebuilt) no longer routes") }
            precondition(again == parameters, "parameters changed when routed again")
        }
    }

    /// Event stream framing: any data, line breaks included, arrives at a standard SSE parser
    /// as one event with exactly that data (line breaks as LF).
    public static func eventStream(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Array(bytes)
        var parser = SSEParser()
        let events = parser.feed(EventStreamFormat.event("snapshot", id: "0123456789abcdef", data: data))
        precondition(events.count == 1, "one event framed as \(events.count)")
        // Line breaks normalized on bytes: string APIs that compare composed characters would
        // not see a CR followed by a combining mark.
        var normalized: [UInt8] = []
        for (index, byte) in data.enumerated() where !(byte == 0x0A && index > 0 && data[index - 1] == 0x0D) {
            normalized.append(byte == 0x0D ? 0x0A : byte)
        }
        let expected = String(decoding: normalized, as: UTF8.self)
        precondition(events[0].data == expected, "the data changed on the way: \(events[0].data.debugDescription) != \(expected.debugDescription)")
        precondition(events[0].type == "snapshot" && events[0].id == "0123456789abcdef")
    }

    /// Upstream responses: whatever the bytes, the parser ends in the same response (status,
    /// body, keep-alive, where it ended) or the same kind of failure whether they arrive at
    /// once, in pieces of any size or one byte at a time; a body never passes its limit. The
    /// first byte picks the options (headers kept, a HEAD request, small limits).
    public static func upstreamResponse(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let options = bytes.first else { return }
        let response = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.dropFirst()))
        let limits = options & 4 == 0
            ? HTTPResponseParser.Limits(maxHeadBytes: 64 * 1024, maxBodyBytes: 1024 * 1024)
            : HTTPResponseParser.Limits(maxHeadBytes: 64, maxBodyBytes: 16)
        func parse(inPiecesOf size: Int) -> ParsedResponse {
            var parser = HTTPResponseParser(limits: limits, keepsHeaders: options & 1 != 0, expectsBody: options & 2 == 0)
            var offset = 0
            while offset < response.count {
                let end = min(response.count, offset + size)
                let outcome = parser.feed(UnsafeRawBufferPointer(rebasing: response[offset..<end]))
                if let parsed = ParsedResponse(outcome, parser, at: offset) { return parsed }
                offset = end
            }
            return ParsedResponse(parser.endOfInput(), parser, at: response.count) ?? .unfinished
        }
        let whole = parse(inPiecesOf: max(1, response.count))
        for size in [1, Int(options >> 3) + 2] {
            let pieces = parse(inPiecesOf: size)
            precondition(pieces == whole, "in pieces of \(size): \(pieces), at once: \(whole)")
        }
        if case .complete(_, let body, _, let end) = whole {
            precondition(body.count <= limits.maxBodyBytes, "a body past its limit")
            precondition(end <= response.count, "ended past the input")
        }
    }

    /// What a parse came to, comparable across ways of feeding it.
    private enum ParsedResponse: Equatable, CustomStringConvertible {
        case complete(status: Int, body: [UInt8], keepsAlive: Bool, end: Int)
        case failed(UpstreamError.Kind)
        case unfinished

        init?(_ outcome: HTTPResponseParser.Outcome, _ parser: HTTPResponseParser, at offset: Int) {
            switch outcome {
            case .needsMore: return nil
            case .complete(let consumed):
                self = .complete(status: parser.status, body: parser.body, keepsAlive: parser.keepsAlive, end: offset + consumed)
            case .failed(let kind, _): self = .failed(kind)
            }
        }

        var description: String {
            switch self {
            case .complete(let status, let body, let keepsAlive, let end): "\(status), \(body.count) bytes, keep-alive \(keepsAlive), end \(end)"
            case .failed(let kind): "failed: \(kind)"
            case .unfinished: "unfinished"
            }
        }
    }

    private static let router: Router<String> = {
        var router = Router<String>()
        for (method, pattern) in [
            (HTTPMethod.post, "/streams/{id}/triggers/{name}"), (.put, "/streams/{id}/inputs/{name}"),
            (.get, "/groups"), (.post, "/groups/reload"), (.get, "/rows"), (.get, "/search"), (.get, "/healthz"),
        ] {
            router.add(method, pattern, pattern)
        }
        return router
    }()
}

/// Runs `check` on every file under the given paths (files or directories): a fuzz
/// target's corpus replayed without libFuzzer.
public func replay(_ paths: [String], through check: (UnsafeBufferPointer<UInt8>) -> Void) throws -> Int {
    var count = 0
    for path in paths {
        for file in try FileList.files(at: path) {
            let bytes = try FileList.read(file)
            bytes.withUnsafeBufferPointer(check)
            count += 1
        }
    }
    return count
}
