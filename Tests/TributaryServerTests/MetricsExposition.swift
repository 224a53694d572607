/// What `GET /metrics` exports, from its Prometheus text: the sample names and the families
/// `# TYPE` declares.
struct MetricsExposition {
    /// Every series' name as it is written (`x_bucket`, `x_sum`, `x_count` for a histogram `x`).
    let samples: Set<String>
    /// Family name to its type (`counter`, `gauge`, `histogram`, `summary`).
    let families: [String: String]

    init(_ text: String) {
        var samples: Set<String> = []
        var families: [String: String] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let words = line.split(separator: " ")
                if words.count == 4 { families[String(words[2])] = String(words[3]) }
            } else if !line.hasPrefix("#"), let name = line.split(whereSeparator: { $0 == "{" || $0 == " " }).first {
                samples.insert(String(name))
            }
        }
        self.samples = samples
        self.families = families
    }

    /// The family a series name belongs to: itself, or a histogram's (summary's) name without
    /// `_bucket` (histograms only), `_sum` or `_count`. A counter named `x_count` stays itself.
    func family(of name: String) -> String? {
        if families[name] != nil { return name }
        for (suffix, types) in [("_bucket", ["histogram"]), ("_sum", ["histogram", "summary"]), ("_count", ["histogram", "summary"])]
        where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let type = families[base], types.contains(type) { return base }
        }
        return nil
    }
}
