import Aggregation
import TributaryConfiguration

/// The configured resources' paths, and `GET /events`, which carries any of them.
extension OpenAPIDocument {
    /// Its route (`/<name>`, or as configured: `/teams/{team}/groups`) and, for a list or
    /// pages resource, `/<name>/reload`.
    func resourcePaths(_ name: String, _ resource: Configuration.Resource) -> [(key: String, value: JSON)] {
        var paths = [(key: resource.routing.route, value: pathItem(resourceOperation(name, resource)))]
        switch resource {
        case .list, .pages: paths.append((key: "/\(name)/reload", value: pathItem(reloadOperation(name, resource))))
        case .search: break
        }
        return paths
    }

    private func resourceOperation(_ name: String, _ resource: Configuration.Resource) -> OpenAPI.Operation {
        let summary: String
        let triggers: [String]
        var inputs: [String] = []
        var parameters: [OpenAPI.Parameter] = []
        var errors = Self.upstreamErrors
        let diff: JSONDiff
        switch resource {
        case .list(let settings):
            let definition = settings.definition
            if let batch = definition.batch {
                summary = "`\(definition.listPath)` of upstream `\(settings.upstream)`, each item merged with its details from `\(batch.path)`, fetched up to \(batch.max) items a call"
                if definition.onItemFailure == .fail {
                    errors.append(OpenAPI.ErrorCase(status: 502, code: "upstream_item_missing", when: "a batch answer left out an item"))
                }
            } else {
                summary = "`\(definition.listPath)` of upstream `\(settings.upstream)`, each item merged with its `\(definition.detailPath.map(String.init(describing:)) ?? "")`"
            }
            triggers = SharedLiveView.triggerNames
            diff = PatchIdentity.diff(definition)
        case .pages(let settings):
            let definition = settings.definition
            summary = "`\(definition.listPath)` of upstream `\(settings.upstream)`, each item with the first page of its `\(definition.pagePath)`"
            triggers = RowsView.triggerNames
            diff = PatchIdentity.diff(definition)
        case .search(let settings):
            let definition = settings.definition
            summary = "Search `\(definition.path)` of upstream `\(settings.upstream)`"
            triggers = []
            diff = PatchIdentity.diff(definition)
            inputs = [definition.parameter]
            parameters.append(Self.queryParameter(definition))
            errors.append(OpenAPI.ErrorCase(
                status: 400, code: "bad_request", when: "`\(definition.parameter)` is longer than \(SearchView.maximumQueryLength) characters"))
        }
        parameters += resource.routing.parameters.map { Self.parameter($0) }
        parameters.append(Self.fieldsParameter(resource.routing.fields))
        for header in configuration.upstreams[resource.upstream]?.forward ?? [] {
            parameters.append(OpenAPI.Parameter(
                name: header, location: .header,
                description: "Forwarded to the upstream on every call the request causes: the document is this client's own (answers vary on it, `Cache-Control: private`).",
                schema: .object([("type", .string("string"))])))
        }
        errors += Self.parameterErrors(resource.routing)
        if case .list(let settings) = resource {
            errors.append(OpenAPI.ErrorCase(
                status: 503, code: "too_many_pipelines",
                when: "an event stream of parameter values or an identity beyond the resource's \(settings.maxLivePipelines) live pipelines"))
            // Only keys of parameter values or of an identity are started by a client.
            if !resource.routing.parameters.isEmpty || isPerIdentity(resource) || configuration.access(of: name).authRequired {
                errors.append(OpenAPI.ErrorCase(
                    status: 429, code: "too_many_client_pipelines",
                    when: "an event stream that would start a live pipeline beyond the client's share of them "
                        + "(\(configuration.clientShare(of: settings.maxLivePipelines)): `server.maxClientSharePercent`)"))
            }
            if isPerIdentity(resource) {
                errors.append(OpenAPI.ErrorCase(
                    status: 503, code: "too_many_identities",
                    when: "an event stream of a new identity beyond `server.maxIdentities` (\(configuration.server.maxIdentities))"))
                errors.append(OpenAPI.ErrorCase(
                    status: 429, code: "too_many_client_identities",
                    when: "an event stream of a new identity beyond the client's share of `server.maxIdentities` "
                        + "(\(configuration.clientShare(of: configuration.server.maxIdentities)))"))
            }
        }
        let matched = diff.itemIDs.map { "`\($0)`" }.joined(separator: ", then ")
        if case .list(let settings) = resource {
            parameters.append(Self.progressiveParameter(
                "Items still waiting for their details hold their list members and `\"\(settings.definition.pendingMember)\": true`."))
        }
        parameters.append(Self.updatesParameter(
            "An array whose items all carry an id (\(matched)), none repeated, is patched by it; any other index by index."))
        parameters.append(OpenAPI.Parameter(
            name: "Last-Event-ID", location: .header,
            description: "An event stream reconnecting: the version of the document the client has, which is then not sent again "
                + "(with `updates=patch`, the next change is a patch from it, if it is the current one).",
            schema: .object([("type", .string("string"))])))
        parameters.append(OpenAPI.Parameter(
            name: "If-None-Match", location: .header,
            description: "JSON: the `ETag` of a document the client has (a list, `W/` tags and `*` too); 304 when it is still current.",
            schema: .object([("type", .string("string"))])))
        let control = [("triggers", triggers), ("inputs", inputs)].map { kind, names in
            "\(kind): " + (names.isEmpty ? "none" : names.map { "`\($0)`" }.joined(separator: ", "))
        }
        let document = Self.reference(Self.documentSchemaName(name))
        let events = Self.eventSchema([
            OpenAPI.Event(name: "stream", data: Self.reference("StreamAnnouncement"), when: "first, once"),
            OpenAPI.Event(name: "snapshot", data: document, when: "whenever the document changes; `id` is its version", hasID: true),
            OpenAPI.Event(
                name: "patch", data: Self.reference("JSONPatch"),
                when: "with `updates=patch`, a change after the first document: the RFC 6902 patch from the document the client has; "
                    + "`id` is the version of the document it makes (its JSON `ETag`)",
                hasID: true),
            OpenAPI.Event(name: "error", data: Self.reference("Error"), when: "a refresh failed; the stream stays open"),
        ])
        return OpenAPI.Operation(
            method: "get", id: "get_\(name)", tag: .resources, summary: summary,
            description: "With `Accept: text/event-stream`: the document live (\(control.joined(separator: "; "))).",
            parameters: parameters,
            answers: [OpenAPI.Answer(status: 200, description: "The document, or its live stream.", content: [
                ("application/json", document), ("text/event-stream", events),
            ], headers: Self.staleHeaders(resource)), OpenAPI.Answer(
                status: 304, description: "The JSON document `If-None-Match` names is still current: no body.", content: [],
                headers: Self.staleHeaders(resource))],
            errors: errors + [
                OpenAPI.ErrorCase(status: 400, code: "invalid_parameter", when: "`updates` is neither `snapshot` nor `patch`"),
                OpenAPI.ErrorCase(status: 400, code: "invalid_parameter", when: "`progressive` is neither `true` nor `false`"),
                Self.fieldsError,
                OpenAPI.ErrorCase(status: 503, code: "too_many_subscribers", when: "an event stream asked for at `sse.maxSubscribers` streams"),
            ] + accessErrors([configuration.access(of: name)], streams: true),
            security: bearerSecurity([configuration.access(of: name)]))
    }

    /// `progressive`: whether an event stream shows a pipeline's first document as it arrives
    /// (``ProgressiveDocuments``); `marker` says how a pending item looks.
    static func progressiveParameter(_ marker: String) -> OpenAPI.Parameter {
        OpenAPI.Parameter(
            name: ProgressiveDocuments.parameter, location: .query,
            description: "For event streams of list resources (a JSON answer is complete either way): `true` sends a live pipeline's "
                + "first document as soon as the list is known, then the items' details as they arrive (arrivals within "
                + "`sse.progressiveWindow` as one event, a patch with `updates=patch`), the last event the complete document; "
                + "`false` (the default) sends only complete documents. An empty value counts as none. \(marker)",
            schema: .object([
                ("type", .string("string")), ("enum", .array((ProgressiveDocuments.values + [""]).map(JSON.string))), ("default", .string("false")),
            ]))
    }

    /// `fields`: the members kept of each element (``FieldSelection``), within what the
    /// resource serves (`served`); on `GET /events`, prefixed with the resource's name.
    static func fieldsParameter(_ served: FieldSelection, prefix: String = "", subscription: String = "") -> OpenAPI.Parameter {
        let within = served.keepsEverything ? "" : " The resource serves only `\(served.names.joined(separator: ","))`: other names are absent."
        return OpenAPI.Parameter(
            name: prefix + FieldSelection.parameter, location: .query,
            description: "The members to keep of each element, comma-separated, in the element's own order: `id,name`; a dotted name "
                + "keeps one member inside its parent object (`owner.login`). A failed item's `error` is always kept. The kept "
                + "document is the answer: its `ETag`, its stream versions and patches; a stream whose kept members did not change "
                + "gets no event. At most \(FieldSelection.maximumNames) names of at most \(FieldSelection.maximumNameBytes) bytes.\(within)\(subscription)",
            schema: .object([("type", .string("string")), ("pattern", .string(Self.fieldsPattern))]))
    }

    /// What a `fields` list looks like: 1 to 64 names, none empty, nor empty between dots. (The
    /// 128-byte bound of a name is in bytes, which a pattern cannot count: the description says it.)
    static var fieldsPattern: String {
        let name = #"[^,.]+(\.[^,.]+)*"#
        return "^\(name)(,\(name)){0,\(FieldSelection.maximumNames - 1)}$"
    }

    /// The 400 of a `fields` list the service refuses.
    static let fieldsError = OpenAPI.ErrorCase(
        status: 400, code: "invalid_parameter",
        when: "`fields` has an empty name, more than \(FieldSelection.maximumNames) names or a name over \(FieldSelection.maximumNameBytes) bytes")

    /// `updates`: whether an event stream sends each new document whole or as a patch
    /// (``EventUpdates``); `matching` says how its arrays' items are matched.
    static func updatesParameter(_ matching: String) -> OpenAPI.Parameter {
        OpenAPI.Parameter(
            name: EventUpdates.parameter, location: .query,
            description: "For event streams (a JSON answer is the same with either value): `snapshot` (the default) sends every new document whole "
                + "(`event: snapshot`); `patch` sends the first whole, then each change as `event: patch`, an RFC 6902 JSON Patch "
                + "from the document the client has, or as a snapshot when the patch would not be smaller. An empty value counts "
                + "as none. \(matching)",
            schema: .object([
                ("type", .string("string")), ("enum", .array((EventUpdates.values + [""]).map(JSON.string))), ("default", .string("snapshot")),
            ]))
    }

    /// `Age` and `Tributary-Stale`, which a JSON answer carries when it is the last good
    /// document served after a failed fetch: only for a resource with `staleIfError`.
    private static func staleHeaders(_ resource: Configuration.Resource) -> [(name: String, header: JSON)] {
        guard let maximumAge = resource.answers.staleIfError else { return [] }
        return [
            ("Age", OpenAPI.ErrorCase.header(
                "JSON, stale answers only: whole seconds since the document was fetched (at most \(maximumAge), `staleIfError`).",
                integer: true)),
            ("Tributary-Stale", OpenAPI.ErrorCase.header(
                "JSON, stale answers only: the fetch failed with this error code (e.g. `upstream_timeout`); the document is the last good one.")),
        ]
    }

    /// The name of `/<name>`'s document schema under `components.schemas`.
    static func documentSchemaName(_ name: String) -> String { "\(name)Document" }

    /// The schema of the JSON document of `resource` (as answered, and as a snapshot's data).
    static func documentSchema(_ resource: Configuration.Resource) -> JSON {
        switch resource {
        case .list(let settings):
            described(
                "The items in the upstream's order, each merged with its details. An item whose details failed is kept with an `error` member (`ItemError`), or dropped, as configured (`onItemFailure`).",
                .object([("type", .string("array")), ("items", item(idMember: settings.definition.idMember))]))
        case .pages(let settings):
            described(
                "One row per item, in the upstream's order. A row whose next page failed keeps what it loaded, with an `error` member (`ItemError`).",
                .object([("type", .string("array")), ("items", .object([
                    ("type", .string("object")),
                    ("description", .string("Its item and pages; each left out when `fields` does not name it.")),
                    ("properties", .object([
                        (settings.definition.rowItemKey, item(idMember: settings.definition.idMember)),
                        (settings.definition.rowPagesKey, .object([
                            ("type", .string("array")), ("description", .string("The item's pages loaded so far, in order.")),
                        ])),
                    ])),
                ]))]))
        case .search(let settings):
            described(
                "The upstream's results, unchanged and in its order; `[]` without an upstream call for a query shorter than \(settings.definition.minimumLength) characters.",
                .object([("type", .string("array"))]))
        }
    }

    private func reloadOperation(_ name: String, _ resource: Configuration.Resource) -> OpenAPI.Operation {
        let (what, counted) = if case .list = resource {
            ("Refreshes the shared live pipelines now, for every subscriber and identity.", "live pipelines (one per parameter values and identity)")
        } else {
            ("Activates `reload` on every live stream of the resource, on every worker (and, in a fleet, every replica).", "live streams")
        }
        let definitions = resource.routing.parameters
        let aimed = definitions.isEmpty ? "" : " Parameters aim it: only the pipelines whose values are all of those given, byte for byte."
        var errors: [OpenAPI.ErrorCase] = []
        if !definitions.isEmpty {
            errors.append(OpenAPI.ErrorCase(
                status: 400, code: "invalid_parameter",
                when: "a parameter the resource does not declare, one given twice or empty, or a value its `GET` refuses (the message names it); nothing is reloaded"))
        }
        var security: [String] = []
        if configuration.server.adminToken != nil {
            errors.append(OpenAPI.ErrorCase(status: 401, code: "unauthorized", when: "no `Authorization: Bearer <admin token>`, or another token"))
            security.append(Self.adminScheme)
        } else {
            errors.append(OpenAPI.ErrorCase(status: 403, code: "forbidden", when: "a client not on the service's own host (loopback): without an admin token, only those may reload"))
        }
        let parameters = definitions.map { definition in
            let given = switch (definition.location, definition.defaultValue) {
            case (.path, _): "the `{\(definition.name)}` segment of its route, percent-decoded"
            case (.query, nil): "its query"
            case (.query, let value?): "its query (`\(value)` when it gave none)"
            }
            return OpenAPI.Parameter(
                name: definition.name, location: .query,
                description: "Reload only the \(counted) whose `\(definition.name)` is this value, byte for byte, as a `GET` gave it in "
                    + "\(given). Not given: any value.",
                schema: .object(Self.valueSchema(definition)))
        }
        let reloaded = JSON.object([
            ("type", .string("integer")), ("minimum", .integer(0)),
            ("description", .string("The \(counted) of this replica that the reload refreshes. In a fleet every replica refreshes its own; "
                + "those only other replicas have are refreshed, and not counted here.")),
        ])
        return OpenAPI.Operation(
            method: "post", id: "reload_\(name)", tag: .resources, summary: "Reload `/\(name)` for everyone", description: what + aimed,
            parameters: parameters,
            answers: [OpenAPI.Answer(status: 202, description: "The reload has started.", content: [
                ("application/json", Self.object(required: [("reloaded", reloaded)])),
            ])],
            errors: errors, security: security)
    }

    /// Whether `resource`'s documents depend on who asks: its upstream forwards client headers.
    func isPerIdentity(_ resource: Configuration.Resource) -> Bool {
        !(configuration.upstreams[resource.upstream]?.forward.isEmpty ?? true)
    }

    /// A declared parameter of a resource: in its route or its query (on `GET /events`, every
    /// one is a query parameter prefixed with the resource's name), with its schema.
    static func parameter(_ definition: ParameterDefinition, prefix: String = "", subscription: String = "") -> OpenAPI.Parameter {
        let value = valueSchema(definition)
        let location: OpenAPI.Parameter.Location = prefix.isEmpty && definition.location == .path ? .path : .query
        // In a query, an empty value counts as none (the default, or absent): it is valid too.
        var schema: [(key: String, value: JSON)] = location == .path
            ? value
            : [("anyOf", .array([.object(value), .object([("type", .string("string")), ("maxLength", .integer(0))])]))]
        if let value = definition.defaultValue { schema.append(("default", .string(value))) }
        let placement = definition.location == .path ? "a segment of the resource's route" : "a query parameter"
        return OpenAPI.Parameter(
            name: prefix + definition.name, location: location, required: definition.required,
            description: "Goes into the upstream calls' paths (\(placement) of `GET` on the resource).\(subscription)",
            schema: .object(schema))
    }

    /// What a value of a declared parameter must be: a non-empty string within the longest
    /// value, of its `pattern` and `enum`.
    static func valueSchema(_ definition: ParameterDefinition) -> [(key: String, value: JSON)] {
        var value: [(key: String, value: JSON)] = [("type", .string("string")), ("minLength", .integer(1)),
                                                   ("maxLength", .integer(ParameterDefinition.maximumValueBytes))]
        if let pattern = definition.pattern { value.append(("pattern", .string(pattern))) }
        if let allowed = definition.allowed { value.append(("enum", .array(allowed.map(JSON.string)))) }
        return value
    }

    /// The 400s a resource with parameters answers before any upstream call.
    static func parameterErrors(_ routing: Configuration.Routing) -> [OpenAPI.ErrorCase] {
        guard !routing.parameters.isEmpty else { return [] }
        var errors = [OpenAPI.ErrorCase(status: 400, code: "invalid_parameter", when: "a parameter fails its pattern or enum (the message names it)")]
        if routing.parameters.contains(where: \.required) {
            errors.append(OpenAPI.ErrorCase(status: 400, code: "missing_parameter", when: "a required parameter is missing (the message names it)"))
        }
        return errors
    }

    /// A search resource's query parameter (`q`); on `GET /events`, prefixed with the
    /// resource's name (`search.q`), for which `subscription` says what it needs.
    static func queryParameter(_ definition: SearchResource.Definition, prefix: String = "", subscription: String = "") -> OpenAPI.Parameter {
        OpenAPI.Parameter(
            name: prefix + definition.parameter, location: .query,
            description: "The query; for an event stream, the first value of its input `\(definition.parameter)`.\(subscription)",
            schema: .object([("type", .string("string")), ("maxLength", .integer(SearchView.maximumQueryLength))]))
    }

    /// An upstream item as Tributary passes it on: an object with its id, unless `fields`
    /// (the client's, or the resource's) leaves the id out.
    private static func item(idMember: String) -> JSON {
        .object([
            ("type", .string("object")),
            ("description", .string("The item, with its `\(idMember)` unless `fields` leaves it out.")),
            ("properties", .object([(idMember, .object([("type", .array([.string("string"), .string("number")]))]))])),
        ])
    }

    /// What a document built from upstream calls may fail with.
    static let upstreamErrors = [
        OpenAPI.ErrorCase(status: 502, code: "upstream_unavailable", when: "an upstream could not be reached or broke off"),
        OpenAPI.ErrorCase(status: 502, code: "upstream_status", when: "an upstream answered with an error status"),
        OpenAPI.ErrorCase(status: 502, code: "upstream_malformed", when: "an upstream's answer was not JSON of the configured shape"),
        OpenAPI.ErrorCase(status: 502, code: "invalid_item_id", when: "an item's id cannot name an upstream path"),
        OpenAPI.ErrorCase(status: 503, code: "upstream_saturated", when: "too many calls already wait for a connection to the upstream"),
        OpenAPI.ErrorCase(status: 503, code: "upstream_circuit_open", when: "an upstream failed repeatedly and is not called until its circuit breaker's probe"),
        OpenAPI.ErrorCase(status: 504, code: "upstream_timeout", when: "an upstream did not answer in time"),
    ]

    // MARK: - GET /events

    /// One event stream carrying several resources (DESIGN, "One event stream for many resources").
    var eventsOperation: OpenAPI.Operation {
        let names = configuration.resources.keys.sorted()
        let perIdentity = names.contains { name in
            guard case .list = configuration.resources[name] else { return false }
            return isPerIdentity(configuration.resources[name]!)
        }
        let identityErrors = perIdentity ? [
            OpenAPI.ErrorCase(status: 503, code: "too_many_identities", when: "a new identity beyond `server.maxIdentities`"),
            OpenAPI.ErrorCase(status: 429, code: "too_many_client_identities", when: "a new identity beyond the client's share of `server.maxIdentities`"),
        ] : []
        var parameters = [OpenAPI.Parameter(
            name: "resource", location: .query, required: true,
            description: "The resources to carry, in this order, each once: `?resource=groups&resource=rows`.",
            schema: .object([
                ("type", .string("array")),
                ("items", .object([("type", .string("string")), ("enum", .array(names.map(JSON.string)))])),
                ("minItems", .integer(1)), ("maxItems", .integer(16)), ("uniqueItems", .bool(true)),
            ]))]
        for name in names {
            let subscription = " Only with `resource=\(name)`: for a resource not asked for, the request is refused (400)."
            if case .search(let settings) = configuration.resources[name] {
                parameters.append(Self.queryParameter(settings.definition, prefix: "\(name).", subscription: subscription))
            }
            for definition in configuration.resources[name]!.routing.parameters {
                var parameter = Self.parameter(definition, prefix: "\(name).", subscription: subscription)
                // Required only of a stream that carries the resource.
                parameter.required = false
                parameters.append(parameter)
            }
            parameters.append(Self.fieldsParameter(configuration.resources[name]!.routing.fields, prefix: "\(name).", subscription: subscription))
        }
        parameters.append(Self.updatesParameter("For every resource of the stream, each patched as on its own stream."))
        parameters.append(Self.progressiveParameter("For every list resource of the stream."))
        parameters.append(OpenAPI.Parameter(
            name: "Last-Event-ID", location: .header,
            description: "Reconnecting: the last event's id, `groups:<version>,rows:<version>`; each unchanged document is not sent again.",
            schema: .object([("type", .string("string"))])))
        let snapshots = names.map { name in
            Self.object(required: [
                ("resource", .object([("const", .string(name))])),
                ("data", Self.reference(Self.documentSchemaName(name))),
            ])
        }
        let patches = Self.object(required: [
            ("resource", .object([("type", .string("string")), ("enum", .array(names.map(JSON.string)))])),
            ("patch", Self.reference("JSONPatch")),
        ])
        let events = Self.eventSchema([
            OpenAPI.Event(
                name: "stream", data: Self.reference("EventsAnnouncement"),
                when: "once per resource, in request order; each id works with `/streams/{id}/…`"),
            OpenAPI.Event(
                name: "snapshot", data: .object([("oneOf", .array(snapshots))]),
                when: "a resource's document changed; `id` lists every resource's latest version, `groups:<version>,rows:<version>`",
                hasID: true),
            OpenAPI.Event(
                name: "patch", data: patches,
                when: "with `updates=patch`, a resource's document changed after its first: the RFC 6902 patch from the one the "
                    + "client has (with `inputs`, as a snapshot, for a view with inputs); `id` as a snapshot's",
                hasID: true),
            OpenAPI.Event(name: "error", data: Self.reference("EventsError"), when: "a refresh of a resource failed; the stream stays open"),
        ])
        let description = """
            A resource's own query parameters are prefixed with its name and a dot (`search.q=swift`). Bad requests are \
            answered before any event, and leave nothing subscribed.
            """
        return OpenAPI.Operation(
            method: "get", id: "events", tag: .resources, summary: "One event stream for several resources",
            description: description, parameters: parameters,
            answers: [OpenAPI.Answer(status: 200, description: "The event stream.", content: [("text/event-stream", events)])],
            errors: [
                OpenAPI.ErrorCase(status: 400, code: nil,
                                  when: "a resource asked for twice or more than 16, a parameter without a dot, or for a resource not asked for, "
                                    + "or `updates` neither `snapshot` nor `patch`, `progressive` neither `true` nor `false`, "
                                    + "a resource's `fields` refused (`invalid_parameter`)"),
                OpenAPI.ErrorCase(status: 404, code: nil, when: "no resource of that name"),
                OpenAPI.ErrorCase(status: 503, code: "too_many_subscribers", when: "the worker is at `sse.maxSubscribers` streams"),
                OpenAPI.ErrorCase(status: 503, code: "too_many_pipelines", when: "a resource's parameter values or identity beyond its live pipelines"),
                OpenAPI.ErrorCase(status: 429, code: "too_many_client_pipelines",
                                  when: "a live pipeline to start beyond the client's share of a resource's (`server.maxClientSharePercent`)"),
            ] + identityErrors + accessErrors(names.map { configuration.access(of: $0) }, streams: true),
            security: bearerSecurity(names.map { configuration.access(of: $0) }))
    }
}
