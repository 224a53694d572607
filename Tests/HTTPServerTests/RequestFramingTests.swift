@testable import HTTPServer
import Testing

/// The framing follower on its own: it must frame requests exactly as evhttp does, and stop a
/// chunked body at the first byte that breaks RFC 9112's chunk syntax, wherever the stream is
/// split into reads.
@Suite("Request framing: following a client's bytes as evhttp frames them")
struct RequestFramingTests {
    /// Feeds `text` in pieces of `split` bytes; returns the first violation.
    private func follow(_ text: String, split: Int = .max, framing: inout RequestFraming) -> RequestFraming.Violation? {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + split)
            if let violation = bytes[offset..<end].withUnsafeBytes({ framing.feed($0) }) { return violation }
            offset = end
        }
        return nil
    }

    private func violation(in text: String, split: Int = .max) -> RequestFraming.Violation? {
        var framing = RequestFraming()
        return follow(text, split: split, framing: &framing)
    }

    @Test("keep-alive requests with Content-Length, chunked and no bodies are followed to their ends, in any split", arguments: [1, 2, 7, 1000])
    func validStream(split: Int) {
        let stream = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /b HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello"
            + "PUT /c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n"
            + "HEAD /d HTTP/1.1\r\n\r\n"
            + "GET /e HTTP/1.1\n\n"
        var framing = RequestFraming()
        #expect(follow(stream, split: split, framing: &framing) == nil)
        #expect(framing.request == 5)
        #expect(framing.isFollowing)
        #expect(framing.foldedRequests.isEmpty)
    }

    @Test("values passed over at once (targets, other headers' values) hide no framing: a body after them is found, in any split", arguments: [1, 3, 64, 100_000])
    func passedOverValues(split: Int) {
        let long = String(repeating: "v", count: 5_000)
        let stream = "POST /\(long)?q=Content-Length:%209 HTTP/1.1\r\n"
            + "X-Note: Content-Length: 99\r\nX-Also: Transfer-Encoding: chunked\r\nX-Long: \(long)\r\n"
            + "Content-Length: 5\r\n\r\nhello"
            + "PUT /c HTTP/1.1\r\nX-Long: \(long)\r\n Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
            + "GET /d HTTP/1.1\r\nHost: x\r\n\r\n"
        var framing = RequestFraming()
        #expect(follow(stream, split: split, framing: &framing) == nil)
        #expect(framing.request == 3)
        #expect(framing.isFollowing)
        #expect(framing.foldedRequests == [1], "the folded line of request 1 is noted, its text ignored")

        var broken = RequestFraming()
        let badChunk = "PUT /c HTTP/1.1\r\nX-Long: \(long)\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n"
        let violation = follow(badChunk, split: split, framing: &broken)
        #expect(violation?.position == badChunk.utf8.count - 3, "where the chunk's data should have ended in CRLF")
    }

    @Test("a chunk-size line that never ends is stopped at its 17th digit, not buffered", arguments: [1, 4096])
    func endlessChunkSizeLine(split: Int) {
        let head = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        let found = violation(in: head + String(repeating: "0", count: 100_000), split: split)
        #expect(found == RequestFraming.Violation(
            request: 0, position: head.utf8.count, message: "a chunk size has at most 16 hex digits"))
    }

    @Test("chunk sizes that strtoll reads but RFC 9112 does not are violations", arguments: [
        ("0x5\r\nhello\r\n0\r\n\r\n", "a chunk size must be hex digits only"),
        (" 5\r\nhello\r\n0\r\n\r\n", "a chunk size must be hex digits only"),
        ("+5\r\nhello\r\n0\r\n\r\n", "a chunk size must be hex digits only"),
        ("5 \r\nhello\r\n0\r\n\r\n", "a chunk size must be hex digits only"),
        ("5;name=value\r\nhello\r\n0\r\n\r\n", "chunk extensions are not supported"),
        ("5\nhello\r\n0\r\n\r\n", "a chunk-size line must end in CRLF"),
        ("\r\n5\r\nhello\r\n0\r\n\r\n", "a chunk-size line must hold a size"),
        ("5\r\nhelloGET /smuggled HTTP/1.1\r\n\r\n", "a chunk's data must end in CRLF"),
    ])
    func lenientChunkSizes(body: String, message: String) {
        let head = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        let found = violation(in: "GET /first HTTP/1.1\r\n\r\n" + head + body)
        #expect(found?.request == 1)
        #expect(found?.message == message)
        #expect((found?.position ?? 0) >= ("GET /first HTTP/1.1\r\n\r\n" + head).utf8.count)
    }

    @Test("evhttp's framing is mirrored: no body for HEAD, TRACE or Content-Length 0; + and spaces in Content-Length count as evhttp reads them")
    func mirrorsEvhttp() {
        #expect(RequestFraming.framing(method: Array("HEAD".utf8), contentLengths: [Array("5".utf8)], transferEncodings: []) == RequestFraming.Framing.none)
        #expect(RequestFraming.framing(method: Array("TRACE".utf8), contentLengths: [], transferEncodings: [Array("chunked".utf8)]) == RequestFraming.Framing.none)
        #expect(RequestFraming.framing(method: Array("GET".utf8), contentLengths: [Array("+5".utf8)], transferEncodings: []) == .length(5))
        #expect(RequestFraming.framing(method: Array("GET".utf8), contentLengths: [Array("0".utf8)], transferEncodings: []) == RequestFraming.Framing.none)
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [], transferEncodings: [Array("gzip".utf8)]) == RequestFraming.Framing.none)
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [], transferEncodings: [Array("gzip, chunked".utf8)]) == .chunked)
        // evhttp refuses these and closes the connection.
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [Array("5".utf8)], transferEncodings: [Array("chunked".utf8)]) == nil)
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [Array("5".utf8), Array("9".utf8)], transferEncodings: []) == .length(5))
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [], transferEncodings: [Array("chunked, gzip".utf8)]) == nil)
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [Array("-1".utf8)], transferEncodings: []) == nil)
        #expect(RequestFraming.framing(method: Array("POST".utf8), contentLengths: [Array("5x".utf8)], transferEncodings: []) == nil)
    }

    @Test("an obs-fold line is noted for its request, and a folded Transfer-Encoding counts as evhttp joins it")
    func obsFold() {
        var framing = RequestFraming()
        let stream = "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0x5\r\n"
        let found = follow(stream, framing: &framing)
        #expect(framing.foldedRequests == [1])
        #expect(found?.message == "a chunk size must be hex digits only", "the folded value made the body chunked, as in evhttp")
    }

    @Test("after a request evhttp refuses, nothing more is followed")
    func stopsWhereEvhttpCloses() {
        var framing = RequestFraming()
        #expect(follow("POST /a HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", framing: &framing) == nil)
        #expect(!framing.isFollowing)
    }
}
