import Aggregation

/// The live pipelines a reload refreshes (`POST /<resource>/reload?team=core`): those of
/// `resource` whose parameter values hold every one of `values`, byte for byte, whatever
/// their other values and whoever's identity they run for; with no values, every pipeline of
/// the resource. A stream with a pipeline of its own (`kind: pages`) is aimed at by the
/// values it was opened with.
///
/// ```swift
/// let aim = ReloadAim(resource: "groups", values: ParameterValues(["team": "core"]))
/// aim.aims(at: key)   // groups{status=open,team=core}@alice: true; groups{team=web}: false
/// ```
struct ReloadAim: Equatable, Sendable {
    let resource: String
    var values: ParameterValues = .none

    /// Whether a pipeline of `resource` with `parameters` is one to refresh.
    func aims(at resource: String, _ parameters: ParameterValues) -> Bool {
        resource == self.resource && parameters.holds(values)
    }

    /// Whether the pipeline of `key` is one to refresh.
    func aims(at key: SharingKey) -> Bool {
        aims(at: key.resource, key.parameters)
    }
}

/// Where a reload finds what to refresh in this process: the shared pipelines of `kind: list`
/// resources (``LivePipelines``), or the streams that have pipelines of their own
/// (``StreamDirectory``), on every worker.
protocol ReloadTargets: Sendable {
    /// How many live pipelines `aim` names here.
    func count(_ aim: ReloadAim) -> Int
    /// Refreshes the live pipelines `aim` names here, each on its own loop; how many.
    func reload(_ aim: ReloadAim) -> Int
}
