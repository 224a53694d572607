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
