import Aggregation

/// Which member of a resource's items is their id when a stream sends patches
/// (`updates=patch`): an array whose items all carry it is diffed by it (``JSONDiff``), so a
/// changed item costs its changed members and a moved one a `move`, wherever it went. The
/// routes diff by it and the API description names it.
///
/// | kind | arrays matched by |
/// |---|---|
/// | `list` | `list.id` (e.g. `id`) |
/// | `pages` | the rows by their item's id, `row.item` + `list.id` (e.g. `topic.id`); the items of their pages by a member named as `list.id` |
/// | `search` | `id` (as GitHub's results carry it) |
///
/// Arrays whose items do not all carry one, or repeat one, are patched index by index.
enum PatchIdentity {
    static func diff(_ definition: ListResource.Definition) -> JSONDiff {
        JSONDiff(itemIDs: [JSONPath(members: [definition.idMember])])
    }

    static func diff(_ definition: PagedListResource.Definition) -> JSONDiff {
        JSONDiff(itemIDs: [JSONPath(members: [definition.rowItemKey, definition.idMember]), JSONPath(members: [definition.idMember])])
    }

    static func diff(_ definition: SearchResource.Definition) -> JSONDiff {
        JSONDiff(itemIDs: [JSONPath(members: ["id"])])
    }
}
