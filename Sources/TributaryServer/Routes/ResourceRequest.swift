import AccessControl
import Aggregation
import HTTPCore
import HTTPServer
import TributaryConfiguration

/// What one request asks of a resource: its parameter values, who asks (the ``Caller``: an
/// identity and the headers forwarded for it), the ``SharingKey`` everything shared for it
/// is kept under, and the members it keeps of each element (`fields`). The fields are not part
/// of the key: one pipeline or run serves every projection of its document.
struct ResourceRequest: Sendable {
    let parameters: ParameterValues
    let caller: Caller
    let key: SharingKey
    var fields: FieldSelection
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
    /// `resources.NAME.fields`: what a client's `fields` narrows.
    private let servedFields: FieldSelection

    init(resource: String, routing: Configuration.Routing, forwarding: [String], authRequired: Bool = false, hasher: IdentityHasher) throws {
        self.resource = resource
        validator = try ParameterValidator(routing.parameters)
        queryParameters = Set(routing.parameters.filter { $0.location == .query }.map(\.name))
        forwardedHeaderNames = forwarding
        self.authRequired = authRequired
        identities = RecentIdentities(hasher: hasher)
        servedFields = routing.fields
        everyone = ResourceRequest(parameters: .none, caller: .anonymous, key: .publicDocument(of: resource), fields: routing.fields)
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
        // Most requests have no query at all: nothing to read but what the route matched.
        let query = request.query == nil ? [:] : request.queryParameters
        guard !validator.isEmpty else {
            return fields(query[FieldSelection.parameter]).map { fields in
                guard isPerIdentity else {
                    var asked = everyone
                    asked.fields = fields
                    return asked
                }
                return resourceRequest(with: .none, from: request, as: credential, keeping: fields)
            }
        }
        var given = request.parameters
        if !queryParameters.isEmpty {
            for (name, value) in query where queryParameters.contains(name) { given[name] = value }
        }
        if let fields = query[FieldSelection.parameter] { given[FieldSelection.parameter] = fields }
        return read(request, given: given, as: credential)
    }

    /// The resource's parameters given by name (on `GET /events`, those prefixed with its name),
    /// path and query parameters alike, and its `fields`, for `request`'s caller.
    func read(_ request: ServerRequest, given: [String: String], as credential: Credential? = nil) -> Result<ResourceRequest, HTTPError> {
        fields(given[FieldSelection.parameter]).flatMap { fields in
            validator.values(from: given).map { values in resourceRequest(with: values, from: request, as: credential, keeping: fields) }
                .mapError(Self.refusal)
        }
    }

    /// `POST /<name>/reload?team=core`: the parameter values the reload aims at (none: every
    /// pipeline), from the query, each checked as a `GET`'s, with no default filled in
    /// (``ParameterValidator/namedValues(from:)``): 400 `invalid_parameter` naming a parameter
    /// the resource does not declare, one given twice or empty, a value a `GET` would refuse.
    /// `access_token` is a bearer token, never an aim: no fleet message may carry one.
    func reloadValues(of request: ServerRequest) -> Result<ParameterValues, HTTPError> {
        let pairs = QueryString.pairs(request.query ?? "")
        if pairs.contains(where: { $0.name == BearerToken.queryName }) {
            return .failure(HTTPError(status: 400, code: ParameterError.Code.invalidParameter.rawValue,
                                      message: "parameter \(BearerToken.queryName) is a bearer token, not a value to aim a reload at"))
        }
        return validator.namedValues(from: pairs).mapError(Self.refusal)
    }

    /// The 400 answer of parameters the validator refused.
    private static func refusal(_ error: ParameterError) -> HTTPError {
        HTTPError(status: 400, code: error.code.rawValue, message: error.message)
    }

    /// The members a request keeps: those of its `fields` (nil: not given) that the resource
    /// serves, or 400 `invalid_parameter` naming `fields`.
    private func fields(_ given: String?) -> Result<FieldSelection, HTTPError> {
        guard let given else { return .success(servedFields) }
        do {
            return .success(servedFields.intersection(try FieldSelection(parsing: given)))
        } catch {
            return .failure(HTTPError(status: 400, code: ParameterError.Code.invalidParameter.rawValue, message: "parameter fields \(error.problem)"))
        }
    }

    private func resourceRequest(
        with parameters: ParameterValues, from request: ServerRequest, as credential: Credential?, keeping fields: FieldSelection
    ) -> ResourceRequest {
        let caller = caller(of: request, as: credential)
        return ResourceRequest(
            parameters: parameters, caller: caller, key: SharingKey(resource: resource, parameters: parameters, identity: caller.identity),
            fields: fields)
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
