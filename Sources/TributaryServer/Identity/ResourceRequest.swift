import Aggregation
import HTTPCore
import HTTPServer

/// What one request asks of a resource: its parameter values, who asks (the ``Caller``: an
/// identity and the headers forwarded for it), and the ``SharingKey`` everything shared for it
/// is kept under.
struct ResourceRequest: Sendable {
    let parameters: ParameterValues
    let caller: Caller
    let key: SharingKey
}

/// Reads ``ResourceRequest``s of one resource on one worker: its parameters from the route's
/// segments and the query string (or from the `<name>.`-prefixed parameters of `GET /events`),
/// checked before anything is fetched, and its caller from the request's headers.
/// Loop-confined (the validator holds compiled patterns).
struct ResourceRequestReader {
    let resource: String
    let validator: ParameterValidator
    /// The declared query parameters: only these are read from a request's query string.
    private let queryParameters: Set<String>
    /// The headers of the client's request the resource's upstream forwards (`forward`).
    private let forwardedHeaderNames: [String]
    private let hasher: IdentityHasher
    /// What every request asks of a resource without parameters or identity, made once.
    private let everyone: ResourceRequest

    init(resource: String, routing: Configuration.Routing, forwarding: [String], hasher: IdentityHasher) throws {
        self.resource = resource
        validator = try ParameterValidator(routing.parameters)
        queryParameters = Set(routing.parameters.filter { $0.location == .query }.map(\.name))
        forwardedHeaderNames = forwarding
        self.hasher = hasher
        everyone = ResourceRequest(parameters: .none, caller: .anonymous, key: .publicDocument(of: resource))
    }

    /// Whether its documents depend on who asks: its upstream forwards client headers.
    var isPerIdentity: Bool { !forwardedHeaderNames.isEmpty }

    /// The forwarded header names, for `Vary`.
    var varyingHeaders: [String] { forwardedHeaderNames }

    /// `GET <route>`: the path parameters the router matched, the declared query parameters.
    func read(_ request: ServerRequest) -> Result<ResourceRequest, HTTPError> {
        guard !validator.isEmpty else { return .success(isPerIdentity ? resourceRequest(with: .none, from: request) : everyone) }
        var given = request.parameters
        if !queryParameters.isEmpty {
            for (name, value) in request.queryParameters where queryParameters.contains(name) { given[name] = value }
        }
        return read(request, given: given)
    }

    /// The resource's parameters given by name (on `GET /events`, those prefixed with its name),
    /// path and query parameters alike, for `request`'s caller.
    func read(_ request: ServerRequest, given: [String: String]) -> Result<ResourceRequest, HTTPError> {
        switch validator.values(from: given) {
        case .success(let values): .success(resourceRequest(with: values, from: request))
        case .failure(let error): .failure(HTTPError(status: 400, code: error.code.rawValue, message: error.message))
        }
    }

    private func resourceRequest(with parameters: ParameterValues, from request: ServerRequest) -> ResourceRequest {
        let caller = caller(of: request)
        return ResourceRequest(
            parameters: parameters, caller: caller, key: SharingKey(resource: resource, parameters: parameters, identity: caller.identity))
    }

    /// Who `request` is for its resource: the forwarded headers it carried, hashed into an
    /// identity (anonymous when it carried none of them).
    private func caller(of request: ServerRequest) -> Caller {
        guard isPerIdentity else { return .anonymous }
        var headers: [(name: String, value: String)] = []
        for name in forwardedHeaderNames {
            if let value = request.header(name) { headers.append((name, value)) }
        }
        return Caller(identity: hasher.identity(subject: nil, headers: headers), forwardedHeaders: headers)
    }
}
