import Aggregation
import Libevent

/// How clients reach the view model of one live stream, by the id its first event announced:
///
/// - `POST /streams/{id}/triggers/{name}[?arg=…]`: activate a trigger (202).
/// - `PUT /streams/{id}/inputs/{name}` with the new value as the body (UTF-8 text, at most
///   ``maximumInputBytes``): set an input (202).
///
/// An unknown stream, trigger or input is 404; an unacceptable argument or value 400; a body
/// over the limit 413. Only the stream with that id is affected, on whichever worker holds it.
struct StreamControlRoutes {
    static let maximumInputBytes = 4096

    let directory: StreamDirectory
    let loop: EventLoop

    func register(in router: inout Router<Route>) {
        router.add(.post, "/streams/{id}/triggers/{name}") { request in
            let arguments = request.queryParameters
            control(request) { view, name throws(ControlError) in try view.activate(name, arguments: arguments) }
        }
        router.add(.put, "/streams/{id}/inputs/{name}") { request in
            guard request.body.count <= Self.maximumInputBytes else {
                return request.respond(HTTPError(status: 413, code: "input_too_large",
                                                 message: "an input value is at most \(Self.maximumInputBytes) bytes"))
            }
            guard let value = String(validating: request.body, as: UTF8.self) else {
                return request.respond(.badRequest("an input value must be UTF-8 text"))
            }
            control(request) { view, name throws(ControlError) in try view.set(name, to: value) }
        }
    }

    /// Runs `action` on the stream's view model on the loop of the worker holding it, then
    /// answers on this worker's loop.
    private func control(
        _ request: ServerRequest, _ action: @escaping @Sendable (any LiveViewModel, String) throws(ControlError) -> Void
    ) {
        let text = request.parameters["id"] ?? ""
        let name = request.parameters["name"] ?? ""
        guard let id = StreamID(text), let holder = directory.listing(holding: id) else {
            return request.respond(HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(text)"))
        }
        let answer = { @Sendable (outcome: Result<Void, HTTPError>, request: ServerRequest) in
            switch outcome {
            case .success:
                request.respond(status: 202, json: #"{"stream":""# + JSONText.escaped(text) + #"","accepted":""# + JSONText.escaped(name) + #""}"#)
            case .failure(let error):
                request.respond(error)
            }
        }
        let gone = HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(text)")
        guard holder.loop !== loop else {
            return answer(holder.hub?.control(id, name, action) ?? .failure(gone), request)
        }
        let waiting = LoopBound(request, loop: loop)
        holder.loop.execute { [loop] in
            let outcome = holder.hub?.control(id, name, action) ?? .failure(gone)
            loop.execute { answer(outcome, waiting.value) }
        }
    }
}
