/// One page of a paginated list: its items and the cursor of the next page, if any.
///
///     let page = Page(items: ["a", "b"], next: "cursor-2")   // more to come
///     let last = Page(items: ["c"], next: nil as String?)    // the end
public struct Page<Item, Cursor> {
    /// The items of this page, in order.
    public var items: [Item]
    /// The cursor of the next page, or `nil` if this is the last page.
    public var next: Cursor?

    /// Creates a page.
    ///
    ///     Page(items: medias, next: response.next)
    public init(items: [Item], next: Cursor?) {
        self.items = items
        self.next = next
    }
}

extension Page: Equatable where Item: Equatable, Cursor: Equatable {}
extension Page: Hashable where Item: Hashable, Cursor: Hashable {}
extension Page: Sendable where Item: Sendable, Cursor: Sendable {}
