import HTTPCore
import Aggregation
import EventLoop
import HTTPServer

/// How clients reach the view model of one live stream, by the id its first event announced:
///
/// - `POST /streams/{id}/triggers/{name}[?arg=…]`: activate a trigger (202).
/// - `PUT /streams/{id}/inputs/{name}` with the new value as the body (UTF-8 text, at most
///   ``maximumInputBytes``): set an input (202).
///
/// An unknown stream, trigger or input is 404; an unacceptable argument or value 400; a body
/// over the limit 413. Only the stream with that id is affected, on whichever worker holds it,
/// and in a fleet on whichever replica holds it (503 `cluster_unavailable` while Redis cannot
/// be reached, for a stream this replica does not hold).
struct StreamControlRoutes {
    static let maximumInputBytes = 4096

    let directory: StreamDirectory
    let cluster: ClusterLink?
    let loop: EventLoop

    func register(in router: inout Router<Route>) {
        router.add(.post, "/streams/{id}/triggers/{name}") { request in
            control(request, .trigger(request.parameters["name"] ?? "", arguments: request.queryParameters))
        }
        router.add(.put, "/streams/{id}/inputs/{name}") { request in
            guard request.body.count <= Self.maximumInputBytes else {
                return request.respond(HTTPError(status: 413, code: "input_too_large",
                                                 message: "an input value is at most \(Self.maximumInputBytes) bytes"))
            }
            guard let value = String(validating: request.body, as: UTF8.self) else {
                return request.respond(.badRequest("an input value must be UTF-8 text"))
            }
            control(request, .input(request.parameters["name"] ?? "", value: value))
        }
    }

    /// Applies `control` to the stream on the worker, or the replica, holding it, then answers
    /// on this worker's loop.
    private func control(_ request: ServerRequest, _ control: StreamControl) {
        let text = request.parameters["id"] ?? ""
        let unknown = HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(StreamID.redacted(text[...]))")
        guard let id = StreamID(text) else { return request.respond(unknown) }
        let waiting = LoopBound(request, loop: loop)
        let answer = { @Sendable (outcome: Result<Void, HTTPError>) in
            let request = waiting.value
            switch outcome {
            case .success:
                request.respond(status: 202, json: JSONWriter.object([("stream", text), ("accepted", control.name)]),
                                headers: [("Cache-Control", "no-store")])
            case .failure(let error):
                request.respond(error)
            }
        }
        if directory.apply(control, to: id, answeringOn: loop, answer) { return }
        guard let cluster else { return answer(.failure(unknown)) }
        cluster.forward(control, to: id, answeringOn: loop, answer)
    }
}
