import OpenCombine

/// Where an operator stands with its single upstream publisher.
///
/// Declared outside the generic operators on purpose: a type nested in a generic class is
/// itself generic, and unspecialised generic code pays a runtime metadata lookup each time it
/// touches one.
///
///     switch upstreamState {
///     case .awaitingSubscription: ...
///     case let .subscribed(subscription): subscription.request(.max(1))
///     case .completed, .cancelled: ...
///     }
internal enum UpstreamState {
    case awaitingSubscription
    case subscribed(any Subscription)
    /// The upstream finished or failed.
    case completed
    /// The operator cancelled the upstream (its output completed, or was cancelled).
    case cancelled
}

extension UpstreamState {
    /// Takes the upstream's subscription if it was awaited; `false` if it must be cancelled
    /// (a second subscription, or one that arrives after the operator ended).
    ///
    ///     guard upstreamState.accept(subscription) else { subscription.cancel() }
    mutating func accept(_ subscription: any Subscription) -> Bool {
        guard case .awaitingSubscription = self else { return false }
        self = .subscribed(subscription)
        return true
    }

    /// Marks the upstream cancelled and returns its subscription, if it was subscribed, for
    /// the caller to cancel outside its lock.
    ///
    ///     let upstream = upstreamState.takeForCancelling()
    mutating func takeForCancelling() -> (any Subscription)? {
        defer { self = .cancelled }
        if case let .subscribed(subscription) = self {
            return subscription
        }
        return nil
    }
}

