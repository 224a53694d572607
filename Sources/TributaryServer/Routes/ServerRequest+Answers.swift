import Aggregation
import HTTPServer

extension ServerRequest {
    /// Whether the client asked for `text/event-stream` (an `EventSource`, `curl -H 'Accept: text/event-stream'`).
    /// Whether the client asks for an event stream: its `Accept` names `text/event-stream`
    /// with a weight above 0 (`text/event-stream;q=0` refuses one, RFC 9110 §12.4.2). The
    /// header is parsed only when it names the type at all, so plain JSON GETs pay one search.
    var acceptsEventStream: Bool {
        guard let accept = header("Accept"), accept.contains("text/event-stream") else { return false }
        return QualityList.entries(accept).contains { $0.value == "text/event-stream" && $0.quality > 0 }
    }

    /// Marks the request as one for a resource URL, which answers JSON or a stream by `Accept`:
    /// every answer it gets, errors included, says `Vary: Accept`, so a shared cache never
    /// hands an `EventSource` a JSON body or the reverse; and, for a per-identity resource,
    /// the request headers its documents depend on (those it forwards).
    func servesResource(varyingOn headers: [String] = []) {
        responseHeaders.append(("Vary", headers.isEmpty ? "Accept" : (["Accept"] + headers).joined(separator: ", ")))
    }

    /// Answers with a resource's error (502/503/504; a 503 says when to try again:
    /// `Retry-After`, e.g. when an open circuit lets its probe through).
    func respond(_ error: ResourceError) {
        respond(error.httpError, headers: error.retryAfter.map { [("Retry-After", String($0))] } ?? [])
    }

    /// Answers 200 with `snapshot` as JSON, as a cache can keep it and ask again cheaply:
    ///
    /// - `ETag: "<version>"`, the id an event stream gives the same document, and
    ///   `Cache-Control: no-cache` (a cache must ask before reusing it: the data is live);
    /// - `304 Not Modified` without a body when `If-None-Match` holds that tag (or `*`);
    /// - gzip when the client accepts it and the body is ``Gzip/minimumBodySize`` or more, the
    ///   tag then weak, `W/"<version>"` (the same document, other bytes: RFC 9110 §8.8.1);
    /// - `Vary: Accept-Encoding` on either, added to the resource's `Vary: Accept`;
    /// - `headers` on either (a stale answer's `Age` and `Tributary-Stale`).
    ///
    /// A per-identity resource's document is answered `privately`: `Cache-Control: private,
    /// no-cache`, so no shared cache keeps one client's document for another.
    func respond(with snapshot: Snapshot, privately: Bool = false, headers extra: [(String, String)] = []) {
        let gzip = snapshot.json.count >= Gzip.minimumBodySize && QualityList.allowsGzip(header("Accept-Encoding"))
        // One array for every header, sized once (each `+` made another).
        var headers: [(String, String)] = []
        headers.reserveCapacity(5 + extra.count)
        headers.append(("ETag", gzip ? EntityTag.weak(snapshot.version) : EntityTag.strong(snapshot.version)))
        headers.append(("Cache-Control", privately ? "private, no-cache" : "no-cache"))
        headers.append(("Vary", "Accept-Encoding"))
        headers.append(contentsOf: extra)
        if let condition = header("If-None-Match"), EntityTag.ifNoneMatch(condition, matches: snapshot.version) {
            return respondNotModified(headers: headers)
        }
        headers.append(("Content-Type", "application/json"))
        if gzip {
            headers.append(("Content-Encoding", "gzip"))
            respond(status: 200, headers: headers, body: gzipped(snapshot.json))
        } else {
            respond(status: 200, headers: headers, body: snapshot.json)
        }
    }
}

extension ServerRequest {
    /// Whether `text/event-stream` is an acceptable answer (RFC 9110 §12.5.1): no `Accept`, or
    /// one with `text/event-stream`, `text/*` or `*/*` not weighted `q=0`. For an endpoint that
    /// answers nothing else; ``acceptsEventStream`` chooses between JSON and a stream.
    var admitsEventStream: Bool {
        guard let accept = header("Accept") else { return true }
        return QualityList.entries(accept).contains { entry in
            ["text/event-stream", "text/*", "*/*"].contains(entry.value) && entry.quality != 0
        }
    }
}

extension ResourceError {
    /// The error as the service answers it: its status, code and message.
    var httpError: HTTPError { HTTPError(status: status, code: code.rawValue, message: message) }
}
