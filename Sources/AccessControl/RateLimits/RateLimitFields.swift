/// The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers
/// (revision 10: Structured Field lists, one item per policy):
///
/// ```
/// RateLimit-Policy: "default";q=40;w=2        (40 requests at once, whole again in 2 s)
/// RateLimit: "default";r=37;t=1               (37 left now, whole again in 1 s)
/// ```
///
/// A policy is named `default` (`server.rateLimit`) or after its resource (its own
/// `rateLimit`); its quota is the burst and its window the seconds an empty bucket takes to
/// fill.
enum RateLimitFields {
    static func policy(_ name: String, _ gcra: GCRA) -> String {
        "\"\(name)\";q=\(gcra.burst);w=\(gcra.windowSeconds)"
    }

    static func state(_ name: String, _ decision: RateDecision) -> String {
        "\"\(name)\";r=\(decision.remaining);t=\(decision.resetSeconds)"
    }
}
