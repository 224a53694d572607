/// What makes two requests of a resource the same document: the resource, its parameter
/// values, and whose data it is. Coalesced runs, live pipelines, stale-if-error documents and
/// the fleet's leases and channels are all keyed by it; there is no way to make one without
/// an ``Identity``, so no shared structure can forget who its documents belong to.
///
/// ```swift
/// let key = SharingKey(resource: "teamgroups", parameters: ParameterValues(["team": "core"]), identity: caller.identity)
/// runs[key]            // a coalesced run of team core, for this caller's identity only
/// ```
public struct SharingKey: Hashable, Sendable, CustomStringConvertible {
    public let resource: String
    public let parameters: ParameterValues
    public let identity: Identity

    public init(resource: String, parameters: ParameterValues, identity: Identity) {
        self.resource = resource
        self.parameters = parameters
        self.identity = identity
    }

    /// The key of a resource's one document for everyone: no parameters, no identity.
    public static func publicDocument(of resource: String) -> SharingKey {
        SharingKey(resource: resource, parameters: .none, identity: .anonymous)
    }

    /// The key written out unambiguously (each part length-prefixed), for a digest that names
    /// it outside the process (the fleet's Redis keys): equal keys, equal text.
    public var canonicalText: String {
        var parts = [resource]
        for entry in parameters.entries { parts += [entry.name, entry.value] }
        parts.append(identity.digest)
        return parts.map { "\($0.utf8.count):\($0)" }.joined()
    }

    /// `teamgroups{team=core}@1a2b3c4d…`: safe for a log line (the identity is abbreviated).
    public var description: String {
        var text = resource
        if !parameters.isEmpty { text += "{\(parameters)}" }
        if !identity.isAnonymous { text += "@\(identity)" }
        return text
    }
}
