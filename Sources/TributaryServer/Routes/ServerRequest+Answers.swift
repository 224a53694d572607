import Aggregation
import Libevent
import OpenCombine

extension ServerRequest {
    /// Whether the client asked for `text/event-stream` (an `EventSource`, `curl -H 'Accept: text/event-stream'`).
    var acceptsEventStream: Bool {
        header("Accept")?.contains("text/event-stream") == true
    }

    /// Answers with the document `pipeline` produces (200), or its error (502/503/504; a 503
    /// says when to try again). A client that disconnects first cancels the pipeline, and
    /// with it every upstream call in flight.
    func answer(with pipeline: some Publisher<JSON, ResourceError>) {
        let subscription = pipeline.sink(
            receiveCompletion: { [self] completion in
                guard case .failure(let error) = completion else { return }
                respond(error.httpError, headers: error.status == 503 ? [("Retry-After", "1")] : [])
            },
            receiveValue: { [self] document in
                respond(status: 200, headers: [("Content-Type", "application/json")], body: document.serialized)
            })
        onDisconnect = { subscription.cancel() }
    }
}

extension ServerRequest {
    /// Whether `text/event-stream` is an acceptable answer (RFC 9110 §12.5.1): no `Accept`, or
    /// one with `text/event-stream`, `text/*` or `*/*` not weighted `q=0`. For an endpoint that
    /// answers nothing else; ``acceptsEventStream`` chooses between JSON and a stream.
    var admitsEventStream: Bool {
        guard let accept = header("Accept") else { return true }
        return accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard let type = parts.first, ["text/event-stream", "text/*", "*/*"].contains(type) else { return false }
            let refused = parts.dropFirst().contains { parameter in
                parameter.hasPrefix("q=") && Double(parameter.dropFirst(2)) == 0
            }
            return !refused
        }
    }
}
