import Aggregation

extension Configuration {
    /// `resources.<name>.details` of a `kind: list` resource: how each item's details are
    /// fetched (one call per item, or in batches), and what is shared of them.
    struct ListDetails {
        /// `path`: required without `batch`, optional (and unused) with it.
        var path: UpstreamPath?
        /// `value`: where a detail answer keeps the details (not used with `batch`).
        var value: JSONPath
        /// `batch`: the batch form of the detail call.
        var batch: DetailBatch?
        /// `batchWindow` (default 0): how long concurrent snapshots' ids wait to share calls.
        var batchWindow: Duration = .zero
        /// `cacheFor` (default 0: off): how long fetched details are reused.
        var cacheFor: Duration = .zero
        /// `cacheBytes` (default 32 MiB): what the process keeps of them, for this resource.
        var cacheBytes = 32 * 1024 * 1024
    }

    /// The keys of `details` and of `details.batch`.
    private static let detailKeys: Set<String> = ["path", "value", "batch", "batchWindow", "cacheFor", "cacheBytes"]
    private static let batchKeys: Set<String> = ["path", "parameter", "style", "max", "items", "id"]

    /// `details` of a list resource whose parameters are `parameters`: its paths' placeholders
    /// must be among them; a window needs a batch.
    static func listDetails(_ section: YAMLSection, parameters: Set<String>) throws(ConfigurationError) -> ListDetails {
        try section.allowOnly(detailKeys)
        let batch = try section.section("batch").map { batch throws(ConfigurationError) in try detailBatch(batch, parameters: parameters) }
        var details = ListDetails(
            path: batch != nil && section.mapping["path"] == nil ? nil : try upstreamPath(section, "path", itemID: true, parameters: parameters),
            value: JSONPath(try section.string("value") ?? ""), batch: batch)
        if let window = try section.duration("batchWindow") {
            guard batch != nil || window == .zero else {
                throw ConfigurationError(section.location("batchWindow"), "a window shares batch calls: it needs details.batch")
            }
            details.batchWindow = window
        }
        details.cacheFor = try section.duration("cacheFor") ?? details.cacheFor
        details.cacheBytes = try section.integer("cacheBytes") ?? details.cacheBytes
        return details
    }

    /// `details.batch`: `path` (required: the resource's parameters, no `{id}`), `parameter`
    /// (`ids`), `style` (`comma`), `max` (`50`), `items` (the whole answer), `id` (`id`).
    private static func detailBatch(_ section: YAMLSection, parameters: Set<String>) throws(ConfigurationError) -> DetailBatch {
        try section.allowOnly(batchKeys)
        let styleName = try section.string("style") ?? DetailBatch.Style.comma.rawValue
        guard let style = DetailBatch.Style(rawValue: styleName) else {
            let known = DetailBatch.Style.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(section.location("style"), "expected one of \(known), found \"\(styleName)\"")
        }
        let parameter = try section.string("parameter") ?? "ids"
        guard !parameter.isEmpty else { throw ConfigurationError(section.location("parameter"), "expected the name of a query parameter") }
        let idMember = try section.string("id") ?? "id"
        guard !idMember.isEmpty else { throw ConfigurationError(section.location("id"), "expected the name of the member that holds an item's id") }
        return DetailBatch(
            path: try upstreamPath(section, "path", itemID: false, parameters: parameters), parameter: parameter, style: style,
            max: try section.integer("max") ?? 50, itemsAt: JSONPath(try section.string("items") ?? ""), idMember: idMember)
    }
}
