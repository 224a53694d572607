import Aggregation
import Libevent

/// How clients reach the view model of one live stream, by the id its first event announced:
///
/// - `POST /streams/{id}/triggers/{name}[?arg=…]`: activate a trigger (202).
/// - `PUT /streams/{id}/inputs/{name}` with the new value as the body (UTF-8 text, at most
///   ``maximumInputBytes``): set an input (202).
///
/// An unknown stream, trigger or input is 404; an unacceptable argument or value 400; a body
/// over the limit 413. Only the stream with that id is affected.
struct StreamControlRoutes {
    static let maximumInputBytes = 4096

    let streams: EventStreamHub

    func register(in router: inout Router<Route>) {
        router.add(.post, "/streams/{id}/triggers/{name}") { request in
            control(request) { view, name throws(ControlError) in
                try view.activate(name, arguments: request.queryParameters)
            }
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

    private func control(_ request: ServerRequest, _ action: (any LiveViewModel, String) throws(ControlError) -> Void) {
        let id = request.parameters["id"] ?? ""
        let name = request.parameters["name"] ?? ""
        guard let view = streams.view(of: id) else {
            return request.respond(HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(id)"))
        }
        do {
            try action(view, name)
            request.respond(status: 202, json: #"{"stream":""# + JSONText.escaped(id) + #"","accepted":""# + JSONText.escaped(name) + #""}"#)
        } catch {
            switch error {
            case .unknownTrigger(let trigger):
                request.respond(HTTPError(status: 404, code: "unknown_trigger",
                                          message: "stream \(id) has no trigger \(trigger) (it has: \(view.triggers.isEmpty ? "none" : view.triggers.joined(separator: ", ")))"))
            case .unknownInput(let input):
                request.respond(HTTPError(status: 404, code: "unknown_input",
                                          message: "stream \(id) has no input \(input) (it has: \(view.inputs.isEmpty ? "none" : view.inputs.joined(separator: ", ")))"))
            case .invalidArgument(let problem):
                request.respond(.badRequest(problem))
            }
        }
    }
}
