import OpenCombine

/// An operator that subscribes to sources of one output type (the children of a merge, inner
/// publishers, pages) through ``Source``, which hands it each event with the source's key.
///
///     extension MergeEngine: SourceOwner {
///         func source(_ index: Int, received input: Downstream.Input) { ... }
///     }
internal protocol SourceOwner: AnyObject {
    /// What tells the sources apart: an index, a generation, a record.
    associatedtype SourceKey
    associatedtype SourceOutput
    associatedtype SourceFailure: Error

    func source(_ key: SourceKey, received subscription: any Subscription)
    func source(_ key: SourceKey, received input: SourceOutput)
    func source(_ key: SourceKey, received completion: Subscribers.Completion<SourceFailure>)
}

/// Subscribes an operator to one of its sources and hands it every event with the source's
/// key. The operator asks the source for values through the subscription, so `receive(_:)`
/// asks for nothing more.
///
///     child.subscribe(Source(engine, key: index))
///
/// A class, not a struct: OpenCombine's publishers keep their subscriber in generic storage,
/// where a reference costs a pointer copy and a struct runs generic value witnesses.
internal final class Source<Owner: SourceOwner>: Subscriber {
    typealias Input = Owner.SourceOutput
    typealias Failure = Owner.SourceFailure

    private let owner: Owner
    private let key: Owner.SourceKey

    init(_ owner: Owner, key: Owner.SourceKey) {
        self.owner = owner
        self.key = key
    }

    func receive(subscription: any Subscription) {
        owner.source(key, received: subscription)
    }

    func receive(_ input: Owner.SourceOutput) -> Subscribers.Demand {
        owner.source(key, received: input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Owner.SourceFailure>) {
        owner.source(key, received: completion)
    }
}
