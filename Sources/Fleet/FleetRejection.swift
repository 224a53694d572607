/// Why a replica dropped a message or a value it read from Redis: the `reason` label of
/// `tributary_cluster_rejected_total` (a fixed set, so the metric stays small whatever
/// arrives).
enum FleetRejection: String, Error, CaseIterable {
    /// The MAC does not match: written without the fleet's secret (or with another one).
    case mac
    /// Its time is ahead of this replica's clock by more than `cluster.leaseTTL`.
    case future
    /// Older than its kind allows (a lease no holder renewed, a control request its sender
    /// gave up on, a reload long past): a genuine value played back.
    case stale
    /// A control request or reload seen already: a genuine message played back.
    case replayed
    /// Not what the kind holds: no MAC and time, a document that is not JSON, an unknown field.
    case malformed
    /// Larger than the kind allows (a state's document: its upstream's `maxResponseBytes`).
    case tooLarge = "too_large"
}
