public import OpenCombine

extension Sequence {

    /// Maps every element to a publisher, runs at most `maxConcurrent` of them at a time and
    /// publishes one array of all their outputs, in element order, once all finished.
    ///
    /// This is ``Publishers/FlatMapSequential`` over the elements followed by `collect()`:
    /// results keep input order however the publishers complete.
    ///
    ///     elements: [1, 2, 3]                maxConcurrent: 2
    ///     inner 1:  --------a|
    ///     inner 2:  --b|
    ///     inner 3:     ----c|
    ///     output:   ---------[a,b,c]|
    ///
    ///     let rows = groups.orderedFanOut(maxConcurrent: 8, onFailure: .replace { group, _ in
    ///         Row(group: group, metadata: nil)
    ///     }) { group in
    ///         api.metadata(for: group.id).map { Row(group: group, metadata: $0) }
    ///     }
    ///
    /// An empty sequence publishes `[]`. An inner publisher that emits several outputs
    /// contributes all of them, in order; under `.skip` a failing one contributes only what
    /// it emitted before failing.
    ///
    /// - Parameters:
    ///   - maxConcurrent: How many publishers may run at once; at least 1.
    ///   - onFailure: What a failing publisher becomes; `.fail` (the default) fails the result.
    ///   - transform: Makes the publisher for one element.
    /// - Returns: A publisher of one array of outputs in element order.
    public func orderedFanOut<Child: Publisher>(
        maxConcurrent: Int,
        onFailure: SequentialFailurePolicy<Element, Child.Output, Child.Failure> = .fail,
        _ transform: @escaping (Element) -> Child
    ) -> AnyPublisher<[Child.Output], Child.Failure> {
        precondition(maxConcurrent > 0, "maxConcurrent must be at least 1")
        return Publishers.Sequence<[Element], Child.Failure>(sequence: Array(self))
            .flatMapSequential(maxPublishers: .max(maxConcurrent), onFailure: onFailure, transform)
            .collect()
            .eraseToAnyPublisher()
    }
}
