import Aggregation

/// Where a reload finds what to refresh in this process: the shared pipelines of `kind: list`
/// resources (``LivePipelines``), or the streams that have pipelines of their own
/// (``StreamDirectory``), on every worker.
protocol ReloadTargets: Sendable {
    /// How many live pipelines `aim` names here.
    func count(_ aim: ReloadAim) -> Int
    /// Refreshes the live pipelines `aim` names here, each on its own loop; how many.
    func reload(_ aim: ReloadAim) -> Int
}
