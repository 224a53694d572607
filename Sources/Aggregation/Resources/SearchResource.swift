public import HTTPCore
public import OpenCombine

/// A query passed to an upstream search, answered with the upstream's items unchanged and in
/// its (relevance) order. Queries shorter than ``Definition/minimumLength`` characters are
/// answered `[]` without calling the upstream.
///
/// ```swift
/// search.results(for: "swift", trace: trace)   // GET /search/repositories?q=swift → the `items` array
/// ```
public struct SearchResource {
    public struct Definition: Sendable, Equatable {
        /// The search call, e.g. `/search/repositories`, with any of the resource's parameters.
        public var path: UpstreamPath
        /// The query parameter that carries the query, e.g. `q`.
        public var parameter: String
        /// Where the results array is in the response, e.g. `items`.
        public var itemsAt: JSONPath
        public var minimumLength: Int
        /// How long a stream's query must stay unchanged before it is searched.
        public var debounce: Duration

        public init(path: UpstreamPath, parameter: String, itemsAt: JSONPath, minimumLength: Int, debounce: Duration) {
            self.path = path
            self.parameter = parameter
            self.itemsAt = itemsAt
            self.minimumLength = minimumLength
            self.debounce = debounce
        }
    }

    public let name: String
    public let upstream: Upstream
    public let definition: Definition
    /// The search call for the parameter values it was made for, without the query.
    public let path: String
    /// The upstream's headers and those forwarded for its caller.
    private let callHeaders: UpstreamHeaders

    /// The resource for `parameters` (already checked), searched for `caller`.
    public init(name: String, upstream: Upstream, definition: Definition, parameters: ParameterValues = .none, caller: Caller = .anonymous) {
        self.name = name
        self.upstream = upstream
        self.definition = definition
        path = definition.path.rendered(with: parameters)
        callHeaders = upstream.headers(for: caller)
    }

    /// The results for `query`: the upstream's items as a JSON array; the call a span of `trace`.
    public func results(for query: String, trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        guard query.count >= definition.minimumLength else {
            return Just(JSON.array([])).setFailureType(to: ResourceError.self).eraseToAnyPublisher()
        }
        let separator = path.contains("?") ? "&" : "?"
        let path = path + separator + definition.parameter + "=" + QueryString.percentEncoded(query)
        return upstream.json(path, headers: callHeaders, trace: trace, call: "search") { document in
            guard let items = definition.itemsAt.value(in: document)?.arrayValue else {
                let found = definition.itemsAt.value(in: document)?.kindDescription ?? "nothing"
                return .failure(ResourceError(
                    code: .upstreamMalformed, upstream: upstream.name, path: path,
                    message: "upstream \(upstream.name): GET \(path): expected an array at \(definition.itemsAt), found \(found)"))
            }
            return .success(JSON.array(items))
        }
        .eraseToAnyPublisher()
    }
}
