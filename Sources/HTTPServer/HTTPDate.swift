import Glibc

/// The `Date` of a server's answers (RFC 9110 §6.6.1: an IMF-fixdate such as
/// `Sun, 06 Nov 1994 08:49:37 GMT`), written once a second.
///
/// evhttp writes a `Date` into every answer that has none, formatting the time anew each time
/// (`evutil_date_rfc1123`); an answer
/// that has one keeps it. One per server, so loop-confined.
struct HTTPDate {
    private var second: time_t = -1
    private var text = ""

    /// The date of an answer made now.
    mutating func now() -> String {
        let now = time(nil)
        if now != second {
            second = now
            text = Self.format(now)
        }
        return text
    }

    /// `time` as an IMF-fixdate, in English whatever the locale (`strftime`'s `%a` and `%b`
    /// follow it).
    static func format(_ time: time_t) -> String {
        var time = time
        var parts = tm()
        gmtime_r(&time, &parts)
        let day = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][Int(parts.tm_wday)]
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][Int(parts.tm_mon)]
        return "\(day), \(twoDigits(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec)) GMT"
    }

    private static func twoDigits(_ value: Int32) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
