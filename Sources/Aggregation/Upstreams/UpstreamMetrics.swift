import CoreMetrics

/// What one upstream's calls look like from here, through swift-metrics:
///
/// - `tributary_upstream_request_duration_seconds{upstream}`: latency of each attempt
/// - `tributary_upstream_errors_total{upstream,code}`: failed attempts, by ``ResourceError/Code``
/// - `tributary_upstream_cancellations_total{upstream}`: calls cancelled in flight (a client left)
/// - `tributary_upstream_not_modified_total{upstream}`: `304`s to revalidating calls, whose
///   earlier answer was reused (``Revalidation``)
///
/// Handles are made once per upstream, so recording costs no lookup.
final class UpstreamMetrics {
    private let name: String
    let latency: CoreMetrics.Timer
    let cancellations: Counter
    let notModified: Counter
    private var errors: [ResourceError.Code: Counter] = [:]

    init(upstream name: String) {
        self.name = name
        latency = CoreMetrics.Timer(label: "tributary_upstream_request_duration_seconds", dimensions: [("upstream", name)])
        cancellations = Counter(label: "tributary_upstream_cancellations_total", dimensions: [("upstream", name)])
        notModified = Counter(label: "tributary_upstream_not_modified_total", dimensions: [("upstream", name)])
    }

    func failed(_ code: ResourceError.Code) {
        if let counter = errors[code] {
            counter.increment()
            return
        }
        let counter = Counter(label: "tributary_upstream_errors_total", dimensions: [("upstream", name), ("code", code.rawValue)])
        errors[code] = counter
        counter.increment()
    }
}
