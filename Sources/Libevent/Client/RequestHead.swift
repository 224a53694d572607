/// The bytes of an upstream request as ``SocketConnection`` sends them: the request line,
/// `Host`, the request's headers, `Content-Length` when there is a body (or a method that
/// expects one), the empty line, the body.
///
/// A header that cannot go on the wire as one line (a CR, LF or NUL in its value, or a name
/// that is not a token) is left out, never sent: its bytes would otherwise start a header (or
/// a request) of their own. So are a caller's `Host`, `Content-Length` and
/// `Transfer-Encoding`: the request's framing is the client's, written once.
enum RequestHead {
    static func write(_ request: UpstreamRequest, hostHeader: String, into bytes: inout [UInt8]) {
        append(request.method.rawValue, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        append(request.base.path, to: &bytes)
        append(request.path, to: &bytes)
        append(" HTTP/1.1\r\nHost: ", to: &bytes)
        append(hostHeader, to: &bytes)
        append("\r\n", to: &bytes)
        for (name, value) in request.headers {
            appendHeader(name, value, to: &bytes)
        }
        if !request.body.isEmpty || request.method == .post || request.method == .put || request.method == .patch {
            append("Content-Length: ", to: &bytes)
            append(String(request.body.count), to: &bytes)
            append("\r\n", to: &bytes)
        }
        append("\r\n", to: &bytes)
        bytes.append(contentsOf: request.body)
    }

    private static func appendHeader(_ name: String, _ value: String, to bytes: inout [UInt8]) {
        var name = name
        var value = value
        name.withUTF8 { name in
            value.withUTF8 { value in
                guard !name.isEmpty, name.allSatisfy(HTTPSyntax.isTokenByte), !isFraming(name),
                      !value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return }
                bytes.append(contentsOf: name)
                bytes.append(UInt8(ascii: ":"))
                bytes.append(UInt8(ascii: " "))
                bytes.append(contentsOf: value)
                bytes.append(UInt8(ascii: "\r"))
                bytes.append(UInt8(ascii: "\n"))
            }
        }
    }

    /// Whether a header name is one of those the client writes itself.
    private static func isFraming(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let name = UnsafeRawBufferPointer(name)
        return HTTPSyntax.equalsIgnoringCase(name, "host") || HTTPSyntax.equalsIgnoringCase(name, "content-length")
            || HTTPSyntax.equalsIgnoringCase(name, "transfer-encoding")
    }

    /// A string's UTF-8 bytes, in one copy from its own storage.
    private static func append(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
