import Aggregation

/// Reading `resources.<name>`: its kind, upstream, route and parameters and its upstream paths
/// (each checked against the others, so read by hand here), then the fields ``Settings``
/// declares for its kind.
extension Configuration {
    static func resource(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> Resource {
        let kindName = try section.requiredString("kind")
        var answers = JSONAnswerSettings.defaults
        try JSONAnswerSettings.fields.read(section, into: &answers)
        let routing = try Self.routing(section, named: name)
        let declared = Set(routing.parameters.map(\.name))
        guard let kind = ResourceKind(rawValue: kindName) else {
            throw ConfigurationError(section.location("kind"), "unknown resource kind \"\(kindName)\" (known: list, pages, search)")
        }
        try section.allowOnlyDeclared(kind: kind)
        switch kind {
        case .list:
            let list = try section.requiredSection("list")
            try list.allowOnlyDeclared(kind: kind)
            var settings = ListSettings.defaults
            settings.definition = try listDetails(try section.requiredSection("details"), parameters: declared, into: settings.definition)
            settings.definition.listPath = try upstreamPath(list, "path", itemID: false, parameters: declared)
            settings.upstream = try section.requiredString("upstream")
            settings.routing = routing
            settings.answers = answers
            try ListSettings.fields.read(section, into: &settings)
            if settings.definition.batch == nil, settings.definition.batchWindow != .zero {
                throw ConfigurationError(section.location("details.batchWindow"), "a window shares batch calls: it needs details.batch")
            }
            return .list(settings)
        case .pages:
            let list = try section.requiredSection("list")
            try list.allowOnlyDeclared(kind: kind)
            let pages = try section.requiredSection("pages")
            try pages.allowOnlyDeclared(kind: kind)
            try section.section("row")?.allowOnlyDeclared(kind: kind)
            var settings = PagesSettings.defaults
            settings.upstream = try section.requiredString("upstream")
            settings.routing = routing
            settings.definition.listPath = try upstreamPath(list, "path", itemID: false, parameters: declared)
            settings.definition.pagePath = try upstreamPath(pages, "path", itemID: true, parameters: declared)
            settings.answers = answers
            try PagesSettings.fields.read(section, into: &settings)
            return .pages(settings)
        case .search:
            var settings = SearchSettings.defaults
            try SearchSettings.fields.read(section, into: &settings)
            let queryParameter = settings.definition.parameter
            if declared.contains(queryParameter) {
                throw ConfigurationError(section.location("parameters.\(queryParameter)"),
                                         "\(queryParameter) is the search's own query parameter (`parameter`); name this one otherwise")
            }
            settings.upstream = try section.requiredString("upstream")
            settings.routing = routing
            settings.definition.path = try upstreamPath(section, "path", itemID: false, parameters: declared)
            settings.answers = answers
            return .search(settings)
        }
    }

    /// A required upstream path starting with `/`, whose placeholders are `parameters` of the
    /// resource and, when `itemID`, `{id}` exactly once (a detail or page path); a list or
    /// search path has no `{id}`.
    static func upstreamPath(
        _ section: YAMLSection, _ key: String, itemID: Bool, parameters: Set<String>
    ) throws(ConfigurationError) -> UpstreamPath {
        let text = try section.requiredString(key)
        guard let path = UpstreamPath(text) else {
            throw ConfigurationError(section.location(key), "expected a path starting with / whose {…} name parameters, found \"\(text)\"")
        }
        let ids = path.placeholders.filter { $0 == UpstreamPath.itemID }.count
        if itemID, ids != 1 {
            throw ConfigurationError(section.location(key), "must hold {id} exactly once (where each item's id goes), found \"\(text)\"")
        }
        if !itemID, ids > 0 {
            throw ConfigurationError(section.location(key), "{id} is for detail and page paths; this path names no item")
        }
        for name in path.placeholders where name != UpstreamPath.itemID && !parameters.contains(name) {
            let known = parameters.isEmpty ? "it declares none" : "declared: \(parameters.sorted().joined(separator: ", "))"
            throw ConfigurationError(section.location(key), "{\(name)} is not a parameter of the resource (\(known))")
        }
        return path
    }

    /// `route` (default `/<name>`), `parameters` and `fields` of resource `name`: every `{…}`
    /// segment of the route names a path parameter, and every path parameter has its segment.
    private static func routing(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> Routing {
        var parameters: [ParameterDefinition] = []
        for (parameterName, parameter) in try section.section("parameters")?.namedSections() ?? [] {
            parameters.append(try Self.parameter(parameter, named: parameterName))
        }
        parameters.sort { $0.name < $1.name }
        let configured = try section.string("route")
        let route = configured ?? "/\(name)"
        let location = section.location("route")
        guard route.hasPrefix("/"), !route.contains("?"), !route.contains("#") else {
            throw ConfigurationError(location, "expected a path starting with /, without a query, found \"\(route)\"")
        }
        // The default route is the name, which ``validate(file:)`` checks as a name.
        let segments = configured == nil ? [] : route.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var named: [String] = []
        for (index, segment) in segments.enumerated() {
            guard !segment.isEmpty else { throw ConfigurationError(location, "has an empty segment: \"\(route)\"") }
            if segment.hasPrefix("{") || segment.hasSuffix("}") || segment.contains("{") || segment.contains("}") {
                guard segment.hasPrefix("{"), segment.hasSuffix("}"), segment.count > 2,
                      !segment.dropFirst().dropLast().contains(where: { $0 == "{" || $0 == "}" }) else {
                    throw ConfigurationError(location, "a parameter takes a whole segment, as in /teams/{team}/groups; found \"\(segment)\"")
                }
                guard index > 0 else {
                    throw ConfigurationError(location, "its first segment must be fixed text: a parameter there would take every other path")
                }
                named.append(String(segment.dropFirst().dropLast()))
            } else if index == 0, reservedFirstSegments.contains(String(segment)) {
                throw ConfigurationError(location, "/\(segment) is Tributary's own endpoint")
            }
        }
        for parameter in named {
            guard let definition = parameters.first(where: { $0.name == parameter }) else {
                throw ConfigurationError(location, "{\(parameter)} is not declared under parameters")
            }
            guard definition.location == .path else {
                throw ConfigurationError(location, "{\(parameter)} is declared in: query; a route segment is a path parameter")
            }
        }
        guard Set(named).count == named.count else { throw ConfigurationError(location, "names a parameter twice") }
        for definition in parameters where definition.location == .path && !named.contains(definition.name) {
            throw ConfigurationError(section.location("parameters.\(definition.name)"),
                                     "a path parameter needs its {\(definition.name)} segment in route (\(route)); or say in: query")
        }
        var fields = FieldSelection.everything
        if let names = try section.strings(FieldSelection.parameter) {
            do {
                fields = try FieldSelection(names: names)
            } catch {
                throw ConfigurationError(section.location(FieldSelection.parameter), error.problem)
            }
        }
        return Routing(route: route, parameters: parameters, fields: fields)
    }

    /// First segments a route may not take: the endpoints every service has.
    private static let reservedFirstSegments: Set<String> = ["streams", "events", "healthz", "readyz", "metrics", "openapi.json"]

    /// The query parameters the service reads on every resource, and what each means: a
    /// resource's parameter of one of these names would never reach it, or worse, an
    /// `access_token` would go into upstream paths and aimed reloads' fleet messages.
    private static let ownQueryParameters: [String: String] = [
        FieldSelection.parameter: "the members a client keeps",
        ServiceQueryParameter.accessToken: "a bearer token, for clients that cannot send headers",
        ServiceQueryParameter.updates: "how a stream sends changes",
        ServiceQueryParameter.progressive: "a stream's first document as soon as the list is known",
    ]

    /// `resources.<name>.parameters.<parameter>`: `in`, `pattern`, `enum`, `default`, `required`.
    private static func parameter(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> ParameterDefinition {
        try section.allowOnlyDeclared()
        guard !name.isEmpty, name != UpstreamPath.itemID, UpstreamPath("/{\(name)}") != nil else {
            throw ConfigurationError(section.location(""), "a parameter's name is letters, digits, - and _ (and not id, which names an item)")
        }
        if let meaning = ownQueryParameters[name] {
            throw ConfigurationError(section.location(""), "\(name) is every resource's own query parameter (\(meaning)); name this one otherwise")
        }
        let locationName = try section.string("in") ?? ParameterDefinition.Location.path.rawValue
        guard let location = ParameterDefinition.Location(rawValue: locationName) else {
            throw ConfigurationError(section.location("in"), "expected path or query, found \"\(locationName)\"")
        }
        let definition = ParameterDefinition(
            name: name, location: location, pattern: try section.string("pattern"), allowed: try section.strings("enum"),
            defaultValue: try section.string("default"), required: try section.boolean("required"))
        if let allowed = definition.allowed, allowed.isEmpty {
            throw ConfigurationError(section.location("enum"), "expected at least one value")
        }
        if location == .path {
            if definition.defaultValue != nil {
                throw ConfigurationError(section.location("default"), "a path parameter is always given: its segment is part of the route")
            }
            if definition.required == false {
                throw ConfigurationError(section.location("required"), "a path parameter is always required: its segment is part of the route")
            }
        }
        let validator: ParameterValidator
        do {
            validator = try ParameterValidator([definition])
        } catch {
            throw ConfigurationError(section.location("pattern"), "not a regular expression: \(error)")
        }
        if let value = definition.defaultValue, case .failure(let problem) = validator.values(from: [name: value]) {
            throw ConfigurationError(section.location("default"), "the default itself is refused: \(problem.message)")
        }
        return definition
    }
}
