import AccessControl
import Aggregation
import EventLoop
import HTTPCore
import HTTPServer

/// What the live streams of one worker were opened with: the subject of the bearer token
/// each was opened with (its identity's digest), whose token alone controls the stream;
/// when that token stops being accepted (`exp` + leeway), when the stream ends with `event:
/// error` `token_expired`; and what it holds of its client's ``StreamQuota``, given back
/// when it closes. Streams opened without a token and without a quota are not in it.
/// Loop-confined.
final class StreamGrants {
    /// Streams a client holds of its quota.
    struct Held {
        let quota: StreamQuota
        let client: String
        let count: Int
    }

    private struct Grant {
        /// The stream's resource ids, as it opened (a `GET /events` stream may lose some), when
        /// a token opened it; none otherwise.
        let ids: [StreamID]
        let held: Held?
        let expiry: LoopTimer?
    }

    private let loop: EventLoop
    private var grants: [ObjectIdentifier: Grant] = [:]
    private var owners: [StreamID: String] = [:]

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// `stream` opened with `credential` (nil: no token), holding `held` of its client's quota.
    func opened(_ stream: EventStream, credential: Credential?, holding held: Held?) {
        guard credential != nil || held != nil else { return }
        var ids: [StreamID] = []  // only a token's streams have owners to forget
        var expiry: LoopTimer?
        if let credential {
            ids = stream.feeds.map(\.id)
            for id in ids { owners[id] = credential.subjectIdentity.digest }
            expiry = Self.expiry(of: stream, acceptedUntil: credential.acceptedUntil, on: loop)
        }
        grants[ObjectIdentifier(stream)] = Grant(ids: ids, held: held, expiry: expiry)
    }

    /// The longest a token's timer waits at once. A token's `exp` may be any number (the year
    /// 9999 is a common "never expires"), and a timer takes a `Duration`; one that fires
    /// before the token expired sets itself again for what is left.
    static let longestWait: Duration = .seconds(86_400)

    /// A timer that ends `stream` with `token_expired` once `acceptedUntil` (seconds since
    /// 1970, from the token: any number) has passed.
    private static func expiry(of stream: EventStream, acceptedUntil: Double, on loop: EventLoop) -> LoopTimer {
        // Weak: the timer holds this closure, and the grant holds the timer.
        weak var timer: LoopTimer?
        let fire = { [weak stream] in
            guard let stream else { return }
            let left = acceptedUntil - TokenVerifier.now()
            guard left > 0 else {
                _ = stream.end(Dictionary(stream.feeds.map { ($0.resource, ResourceEnding.tokenExpired) }, uniquingKeysWith: { first, _ in first }))
                return
            }
            timer?.schedule(after: .clamped(seconds: left, to: .zero ... longestWait))
        }
        let made = LoopTimer(loop: loop, action: fire)
        timer = made
        made.schedule(after: .clamped(seconds: acceptedUntil - TokenVerifier.now(), to: .zero ... longestWait))
        return made
    }

    /// `stream` closed: its quota is given back, its ids no longer name an owner.
    func closed(_ stream: EventStream) {
        guard let grant = grants.removeValue(forKey: ObjectIdentifier(stream)) else { return }
        grant.expiry?.cancel()
        if let held = grant.held { held.quota.give(held.count, for: held.client) }
        for id in grant.ids { owners[id] = nil }
    }

    /// Why the holder of a token of subject `subject` (its identity's digest; nil: no token)
    /// may not control the stream of `feed`: 401 without a token, 403 with another
    /// subject's; nil when it may (a stream opened without a token is anyone's with its id).
    func refusal(of feed: EventFeed, to subject: String?) -> HTTPError? {
        guard let owner = owners[feed.id] else { return nil }
        guard let subject else { return AuthFailure.missing.error }
        guard subject == owner else {
            return HTTPError(status: 403, code: "forbidden", message: "stream \(feed.id.redacted) was opened with another subject's token")
        }
        return nil
    }
}
