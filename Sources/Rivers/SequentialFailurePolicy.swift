/// What ``Publishers/FlatMapSequential`` (and `orderedFanOut`) makes of an inner publisher
/// that fails.
///
/// Outputs the failing inner already produced are kept in their place either way; the policy
/// decides what happens at the point of failure.
///
///     elements: -1-2-3-|              3's inner fails with e
///     .fail:    -A-B-#                the whole stream fails with e
///     .replace: -A-B-f(3,e)-|         a fallback output takes the failure's place
///     .skip:    -A-B-|                the failure is dropped, the stream goes on
///
///     let metadata = groups.flatMapSequential(
///         maxPublishers: .max(8),
///         onFailure: .replace { group, _ in Metadata.unknown(group.id) }
///     ) { group in api.metadata(for: group.id) }
public enum SequentialFailurePolicy<Element, Output, Failure: Error> {
    /// The whole stream fails with the inner's error; everything still running is cancelled.
    case fail
    /// The inner's failure is replaced by one output made from its element and the error,
    /// after which the inner counts as finished.
    case replace((Element, Failure) -> Output)
    /// The inner's failure is dropped and the inner counts as finished.
    case skip

    /// Replaces every failure with the same `fallback` output.
    ///
    ///     let counts = ids.orderedFanOut(maxConcurrent: 4, onFailure: .replace(with: 0)) { fetchCount($0) }
    public static func replace(with fallback: Output) -> SequentialFailurePolicy {
        .replace { _, _ in fallback }
    }
}
