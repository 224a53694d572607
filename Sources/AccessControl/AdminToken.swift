package import HTTPServer

/// Who may use the reload endpoints: with the admin token (`server.adminToken`,
/// `TRIBUTARY_ADMIN_TOKEN`) set, whoever sends it as `Authorization: Bearer <token>`; without
/// it, only clients on this host (``LoopbackAddress``), so a service reachable from a network
/// is not refreshed, upstream calls and all, by anyone who asks. One per worker, shared by its
/// routes, so a configuration reload changes it for all of them at once. Loop-confined.
package final class AdminToken {
    package var token: String?

    package init(token: String?) {
        self.token = token
    }

    /// Whether `request` may use an admin endpoint; answers 401 (a token missing or wrong) or
    /// 403 (no token configured, a client not on loopback) when not.
    package func authorize(_ request: ServerRequest) -> Bool {
        guard let token else {
            guard request.isFromLoopback else {
                request.respond(HTTPError(status: 403, code: "forbidden",
                                          message: "this endpoint answers clients on the service's own host only, unless server.adminToken is set"))
                return false
            }
            return true
        }
        let presented = request.header("Authorization").flatMap { header -> String? in
            guard header.hasPrefix("Bearer ") else { return nil }
            return String(header.dropFirst("Bearer ".count))
        }
        guard let presented, Self.constantTimeEqual(presented, token) else {
            request.respond(HTTPError(status: 401, code: "unauthorized", message: "this endpoint needs Authorization: Bearer <admin token>"),
                            headers: [("WWW-Authenticate", "Bearer")])
            return false
        }
        return true
    }

    /// Compares without stopping at the first difference, so timing does not reveal a prefix.
    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        var difference = UInt8(left.count == right.count ? 0 : 1)
        for index in 0..<max(left.count, right.count) {
            difference |= (index < left.count ? left[index] : 0) ^ (index < right.count ? right[index] : 0)
        }
        return difference == 0
    }
}
