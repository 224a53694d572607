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
package struct ReloadAim: Equatable, Sendable {
    package let resource: String
    package var values: ParameterValues

    package init(resource: String, values: ParameterValues = .none) {
        self.resource = resource
        self.values = values
    }

    /// Whether a pipeline of `resource` with `parameters` is one to refresh.
    package func aims(at resource: String, _ parameters: ParameterValues) -> Bool {
        resource == self.resource && parameters.holds(values)
    }

    /// Whether the pipeline of `key` is one to refresh.
    package func aims(at key: SharingKey) -> Bool {
        aims(at: key.resource, key.parameters)
    }
}
