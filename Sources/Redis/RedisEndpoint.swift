import Glibc

/// Where Redis is and how to log in: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`.
///
/// HOST is an IPv4 address, an IPv6 address in brackets (`[::1]`) or a host name (resolved
/// on the loop, without blocking it, before every connection attempt); PORT defaults to 6379,
/// DB to 0. A password sends `AUTH PASSWORD` (with a user, `AUTH USER PASSWORD`, Redis 6's
/// ACLs); both are percent-decoded. A bad value throws an error that quotes it (password
/// hidden) and says what is wrong, so a configuration key holding it fails at start clearly.
///
/// ```swift
/// let endpoint = try RedisEndpoint("redis://:s3cret@10.0.0.5:6380/2")
/// // endpoint.host == "10.0.0.5", .port == 6380, .database == 2, .password == "s3cret"
/// try RedisEndpoint("redis://x:99999")   // "redis://x:99999": the port must be 1…65535
/// ```
public struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// A host name or an IP address (IPv6 without brackets).
    public var host: String
    /// The TCP port, 6379 unless the URL names another.
    public var port: UInt16
    /// The database `SELECT`ed on every connection (0: none sent).
    public var database: Int
    /// The ACL user `AUTH` names (Redis 6 and later); nil: the default user.
    public var username: String?
    /// The password `AUTH` sends; nil: no `AUTH`.
    public var password: String?

    /// Redis' well-known port.
    public static let defaultPort: UInt16 = 6379

    /// An endpoint from its parts; `host` is not checked (the URL parser checks its own).
    public init(host: String, port: UInt16 = defaultPort, database: Int = 0, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
    }

    /// Parses a `redis://` URL; throws ``RedisEndpointError`` naming what is wrong.
    public init(_ url: String) throws(RedisEndpointError) {
        var parser = Parser(url: url)
        self = try parser.parse()
    }

    /// The URL, with the password shown as `***` (safe for logs).
    public var description: String {
        var text = "redis://"
        if password != nil { text += "\(username ?? ""):***@" }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)"
        if database != 0 { text += "/\(database)" }
        return text
    }

    /// Whether ``host`` is an IPv4 or IPv6 address, which needs no resolving.
    var isIPAddressLiteral: Bool {
        Self.isIPv4(host) || Self.isIPv6(host)
    }

    static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }
}

/// A `redis://` URL that cannot be used, and why. The description quotes the value with its
/// password hidden: `"redis://x:99999": the port must be 1…65535`.
public struct RedisEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The value as given, its password replaced by `***`.
    public let url: String
    /// What is wrong with it, e.g. `the port must be 1…65535`.
    public let problem: String

    public var description: String { "\"\(url)\": \(problem)" }
}

extension RedisEndpoint {
    /// The grammar, one component at a time, each with its own message.
    private struct Parser {
        let url: String
        let shown: String

        init(url: String) {
            self.url = url
            shown = Self.hidingPassword(url)
        }

        func failure(_ problem: String) -> RedisEndpointError {
            RedisEndpointError(url: shown, problem: problem)
        }

        mutating func parse() throws(RedisEndpointError) -> RedisEndpoint {
            if url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
                throw failure("must not contain spaces or control characters")
            }
            guard let (scheme, rest) = Self.splitScheme(url) else {
                throw failure("must start with redis://, as in redis://127.0.0.1:6379")
            }
            switch scheme.lowercased() {
            case "redis": break
            case "rediss": throw failure("TLS (rediss://) is not supported: use redis://")
            default: throw failure("must start with redis://, as in redis://127.0.0.1:6379")
            }
            if rest.contains("?") || rest.contains("#") { throw failure("must not have a query or fragment") }
            let authority = rest.prefix { $0 != "/" }
            let path = rest[authority.endIndex...]

            var endpoint = RedisEndpoint(host: "")
            var hostPort = authority
            if let at = authority.lastIndex(of: "@") {
                (endpoint.username, endpoint.password) = try credentials(authority[..<at])
                hostPort = authority[authority.index(after: at)...]
            }
            (endpoint.host, endpoint.port) = try hostAndPort(hostPort)
            endpoint.database = try database(path)
            return endpoint
        }

        private func credentials(_ userInfo: Substring) throws(RedisEndpointError) -> (String?, String) {
            guard let colon = userInfo.firstIndex(of: ":") else {
                throw failure("a password goes after a colon, as in redis://:PASSWORD@host or redis://USER:PASSWORD@host")
            }
            let user = try decoded(userInfo[..<colon], "user name")
            let password = try decoded(userInfo[userInfo.index(after: colon)...], "password")
            guard !password.isEmpty else { throw failure("the password is empty") }
            return (user.isEmpty ? nil : user, password)
        }

        private func hostAndPort(_ text: Substring) throws(RedisEndpointError) -> (String, UInt16) {
            let host: Substring
            let portText: Substring?
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else { throw failure("the IPv6 address has no closing ]") }
                host = text[text.index(after: text.startIndex)..<close]
                let after = text[text.index(after: close)...]
                guard after.isEmpty || after.hasPrefix(":") else { throw failure("only :PORT may follow the IPv6 address") }
                portText = after.isEmpty ? nil : after.dropFirst()
                guard RedisEndpoint.isIPv6(String(host)) else { throw failure("[\(host)] is not an IPv6 address") }
            } else {
                let colons = text.filter { $0 == ":" }.count
                guard colons <= 1 else { throw failure("an IPv6 address goes in brackets, as in redis://[::1]:6379") }
                if let colon = text.firstIndex(of: ":") {
                    host = text[..<colon]
                    portText = text[text.index(after: colon)...]
                } else {
                    host = text
                    portText = nil
                }
                try checkHostName(host)
            }
            guard let portText else { return (String(host), RedisEndpoint.defaultPort) }
            guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), let port = Int(portText), (1...65535).contains(port) else {
                throw failure("the port must be 1…65535")
            }
            return (String(host), UInt16(port))
        }

        private func checkHostName(_ host: Substring) throws(RedisEndpointError) {
            guard !host.isEmpty else { throw failure("has no host") }
            if host.allSatisfy({ $0.isASCIIDigit || $0 == "." }) {
                guard RedisEndpoint.isIPv4(String(host)) else { throw failure("\(host) is not an IPv4 address") }
                return
            }
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            let valid = host.count <= 253 && labels.allSatisfy { label in
                (1...63).contains(label.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.allSatisfy { $0.isASCIIDigit || $0.isASCIILetter || $0 == "-" }
            }
            guard valid else { throw failure("\(host) is not a valid host name") }
        }

        /// `path` is empty or starts with the slash that ended the authority.
        private func database(_ path: Substring) throws(RedisEndpointError) -> Int {
            let number = path.dropFirst()
            if number.isEmpty { return 0 }
            guard number.allSatisfy(\.isASCIIDigit), let database = Int(number), database <= Int(Int32.max) else {
                throw failure("the database must be a number, as in redis://host:6379/0")
            }
            return database
        }

        /// `scheme://rest` split at its first `://`.
        private static func splitScheme(_ url: String) -> (Substring, Substring)? {
            let separator = Array("://".utf8)
            let bytes = Array(url.utf8)
            guard bytes.count >= separator.count,
                  let start = (0...(bytes.count - separator.count)).first(where: { bytes[$0..<$0 + 3].elementsEqual(separator) })
            else { return nil }
            let schemeEnd = url.utf8.index(url.startIndex, offsetBy: start)
            let restStart = url.utf8.index(schemeEnd, offsetBy: 3)
            return (url[..<schemeEnd], url[restStart...])
        }

        /// Percent-decodes a user name or password (`%40` is `@`).
        private func decoded(_ text: Substring, _ what: String) throws(RedisEndpointError) -> String {
            var bytes: [UInt8] = []
            var utf8 = text.utf8.makeIterator()
            while let byte = utf8.next() {
                guard byte == UInt8(ascii: "%") else {
                    bytes.append(byte)
                    continue
                }
                guard let high = utf8.next().flatMap(Self.hexValue), let low = utf8.next().flatMap(Self.hexValue) else {
                    throw failure("the \(what) has a broken percent escape (use %XX)")
                }
                bytes.append(high << 4 | low)
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        private static func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        /// The URL with whatever stands between the user name's colon and the last `@` of the
        /// authority replaced by `***`, so errors and logs never show a password.
        private static func hidingPassword(_ url: String) -> String {
            guard let (_, rest) = splitScheme(url) else { return url }
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return url }
            return String(url[..<authority.index(after: colon)]) + "***" + String(url[at...])
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
    fileprivate var isASCIILetter: Bool { isASCII && isLetter }
}
