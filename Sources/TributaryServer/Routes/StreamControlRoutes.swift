import AccessControl
import HTTPCore
import Aggregation
import EventLoop
import Fleet
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
///
/// A stream opened with a bearer token is controlled only with a token of the same subject:
/// without one 401, with another subject's 403, the right id notwithstanding. A token that
/// does not verify is 401 on any stream. Control counts against `server.rateLimit`.
struct StreamControlRoutes {
    static let maximumInputBytes = 4096

    let directory: StreamDirectory
    let cluster: ClusterLink?
    let loop: EventLoop
    let gate: AccessGate
    let policy: AccessPolicy

    func register(in router: inout Router<Route>) {
        router.add(.post, "/streams/{id}/triggers/{name}") { request in
            admitted(request) { subject in
                control(request, .trigger(request.parameters["name"] ?? "", arguments: Self.arguments(of: request)), by: subject)
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
            admitted(request) { subject in control(request, .input(request.parameters["name"] ?? "", value: value), by: subject) }
        }
    }

    /// A trigger's arguments: the request's query without the bearer token (`access_token`),
    /// which has done its work at the door. Arguments may travel to the replica holding the
    /// stream, through Redis, which is outside the trust boundary: a token must never.
    static func arguments(of request: ServerRequest) -> [String: String] {
        var arguments = request.queryParameters
        arguments[BearerToken.queryName] = nil
        return arguments
    }

    /// Runs `body` with the subject of the request's token (its identity's digest) once the
    /// gate lets it through.
    private func admitted(_ request: ServerRequest, _ body: @escaping (String?) -> Void) {
        guard !gate.isOpen(policy) else { return body(nil) }
        gate.admit(request, policy) { credential in body(credential?.subjectIdentity.digest) }
    }

    /// Applies `control` to the stream on the worker, or the replica, holding it, then answers
    /// on this worker's loop.
    private func control(_ request: ServerRequest, _ control: StreamControl, by subject: String?) {
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
                request.respond(error, headers: error.status == 401 ? [("WWW-Authenticate", AuthFailure.realm)] : [])
            }
        }
        if directory.apply(control, to: id, by: subject, answeringOn: loop, answer) { return }
        guard let cluster else { return answer(.failure(unknown)) }
        cluster.forward(control, to: id, by: subject, answeringOn: loop, answer)
    }
}
