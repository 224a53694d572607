/// The entries of a header such as `Accept` or `Accept-Encoding` (RFC 9110 §12.4.2): values
/// separated by commas, each with parameters after `;`, its weight `q` (1 when not given).
///
/// ```swift
/// QualityList.entries("gzip;q=0, br, *;q=0.5")   // [("gzip", 0), ("br", 1), ("*", 0.5)]
/// QualityList.allowsGzip("gzip;q=0")            // false
/// ```
public enum QualityList {
    /// Each entry's value, lower-cased and without spaces, and its weight, from 0 to 1. A `q`
    /// that is not a number (`nan` included) is taken as 1, as a value without one; a number
    /// outside 0…1 (`-1`, `1e308`) is clamped into it.
    public static func entries(_ header: String) -> [(value: String, quality: Double)] {
        header.split(separator: ",").compactMap { range in
            let parts = range.split(separator: ";").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard let value = parts.first, !value.isEmpty else { return nil }
            let given = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return (value, given.isNaN ? 1 : min(max(given, 0), 1))
        }
    }

    /// Whether an `Accept-Encoding` header allows a gzip answer (RFC 9110 §12.5.3): `gzip` (or
    /// `x-gzip`) weighted above 0, or when neither is named, `*` weighted above 0. No header:
    /// no (a client that sends none may not expect a coding it did not ask for).
    public static func allowsGzip(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        let entries = entries(acceptEncoding)
        if let named = entries.first(where: { $0.value == "gzip" || $0.value == "x-gzip" }) { return named.quality > 0 }
        if let any = entries.first(where: { $0.value == "*" }) { return any.quality > 0 }
        return false
    }
}
