import Aggregation

/// Reading `resources.<name>.details` of a `kind: list` resource: how each item's details are
/// fetched (one call per item, or in batches). Its paths are read here, checked against the
/// resource's parameters; its other keys are fields of the list (``Settings``).
extension Configuration {
    /// `definition` with the detail path and the batch of `details` (`section`), whose
    /// placeholders must be among `parameters`: the path is required without a batch.
    static func listDetails(
        _ section: YAMLSection, parameters: Set<String>, into definition: ListResource.Definition
    ) throws(ConfigurationError) -> ListResource.Definition {
        try section.allowOnlyDeclared(kind: .list)
        var definition = definition
        definition.batch = try section.section("batch").map { batch throws(ConfigurationError) in
            try detailBatch(batch, parameters: parameters)
        }
        if definition.batch == nil || section.mapping["path"] != nil {
            definition.detailPath = try upstreamPath(section, "path", itemID: true, parameters: parameters)
        }
        return definition
    }

    /// `details.batch`: its `path` (the resource's parameters, no `{id}`), then its fields.
    private static func detailBatch(_ section: YAMLSection, parameters: Set<String>) throws(ConfigurationError) -> DetailBatch {
        try section.allowOnlyDeclared(kind: .list)
        var batch = DetailBatch.defaults
        try DetailBatch.fields.read(section, into: &batch)
        batch.path = try upstreamPath(section, "path", itemID: false, parameters: parameters)
        return batch
    }
}
