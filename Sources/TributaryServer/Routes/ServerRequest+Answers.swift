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
