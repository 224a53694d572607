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
/// checked before anything is fetched, and its caller from the request's headers and, when
/// the resource requires a token, the token's subject.
/// Loop-confined (the validator holds compiled patterns).
struct ResourceRequestReader {
    let resource: String
    let validator: ParameterValidator
    /// The declared query parameters: only these are read from a request's query string.
    private let queryParameters: Set<String>
    /// The headers of the client's request the resource's upstream forwards (`forward`).
    private let forwardedHeaderNames: [String]
    /// Whether a token is required (`auth.required`): its subject is then part of the identity.
    private let authRequired: Bool
    private let identities: RecentIdentities
    /// What every request asks of a resource without parameters or identity, made once.
    private let everyone: ResourceRequest

    init(resource: String, routing: Configuration.Routing, forwarding: [String], authRequired: Bool = false, hasher: IdentityHasher) throws {
        self.resource = resource
        validator = try ParameterValidator(routing.parameters)
        queryParameters = Set(routing.parameters.filter { $0.location == .query }.map(\.name))
        forwardedHeaderNames = forwarding
        self.authRequired = authRequired
        identities = RecentIdentities(hasher: hasher)
        everyone = ResourceRequest(parameters: .none, caller: .anonymous, key: .publicDocument(of: resource))
    }

    /// Whether its documents depend on who asks: its upstream forwards client headers, or it
    /// requires a token.
    var isPerIdentity: Bool { !forwardedHeaderNames.isEmpty || authRequired }

    /// The request headers its documents vary on, for `Vary`: those forwarded, and
    /// `Authorization` when it requires a token.
    var varyingHeaders: [String] { authRequired ? forwardedHeaderNames + ["Authorization"] : forwardedHeaderNames }

    /// `GET <route>`: the path parameters the router matched, the declared query parameters,
    /// for the holder of `credential` (the request's verified token, if any).
    func read(_ request: ServerRequest, as credential: Credential? = nil) -> Result<ResourceRequest, HTTPError> {
        guard !validator.isEmpty else {
            return .success(isPerIdentity ? resourceRequest(with: .none, from: request, as: credential) : everyone)
        }
        var given = request.parameters
        if !queryParameters.isEmpty {
            for (name, value) in request.queryParameters where queryParameters.contains(name) { given[name] = value }
        }
        return read(request, given: given, as: credential)
    }

    /// The resource's parameters given by name (on `GET /events`, those prefixed with its name),
    /// path and query parameters alike, for `request`'s caller.
    func read(_ request: ServerRequest, given: [String: String], as credential: Credential? = nil) -> Result<ResourceRequest, HTTPError> {
        switch validator.values(from: given) {
        case .success(let values): .success(resourceRequest(with: values, from: request, as: credential))
        case .failure(let error): .failure(HTTPError(status: 400, code: error.code.rawValue, message: error.message))
        }
    }

    private func resourceRequest(with parameters: ParameterValues, from request: ServerRequest, as credential: Credential?) -> ResourceRequest {
        let caller = caller(of: request, as: credential)
        return ResourceRequest(
            parameters: parameters, caller: caller, key: SharingKey(resource: resource, parameters: parameters, identity: caller.identity))
    }

    /// Who `request` is for its resource: its token's subject and the forwarded headers it
    /// carried, hashed into an identity (anonymous when it carried neither).
    private func caller(of request: ServerRequest, as credential: Credential?) -> Caller {
        guard isPerIdentity else { return .anonymous }
        var headers: [(name: String, value: String)] = []
        for name in forwardedHeaderNames {
            if let value = request.header(name) { headers.append((name, value)) }
        }
        // The subject alone was hashed once, when the token was verified.
        if headers.isEmpty, let credential { return Caller(identity: credential.subjectIdentity, forwardedHeaders: []) }
        return Caller(identity: identities.identity(subject: credential?.subject, headers: headers), forwardedHeaders: headers)
    }
}
