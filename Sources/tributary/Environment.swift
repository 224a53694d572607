import Glibc

/// The process environment and files, read without Foundation.
enum Environment {
    static var variables: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}

enum ConfigurationFile {
    /// Why a file could not be opened: its `errno` (`ENOENT`: there is none).
    struct ReadError: Error, CustomStringConvertible {
        let code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    static func read(_ path: String) throws(ReadError) -> String {
        guard let file = fopen(path, "rb") else { throw ReadError(code: errno) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
