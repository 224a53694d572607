import Yams

/// One mapping of the YAML configuration, read with its key path so every problem names
/// the exact key: `config/tributary.yaml: upstreams.tasks.poolSize: expected a whole number ≥ 1, found "many"`.
struct YAMLSection {
    let mapping: Node.Mapping
    /// The key path of this mapping, e.g. `resources.groups` (empty at the top).
    let path: String
    /// The file, for messages.
    let file: String
    /// The key path with `*` for each name the file chose, e.g. `resources.*`: where
    /// ``Settings`` finds the keys allowed here and the range of a number read here.
    let pattern: String

    init(mapping: Node.Mapping, path: String, file: String, pattern: String? = nil) {
        self.mapping = mapping
        self.path = path
        self.file = file
        self.pattern = pattern ?? path
    }

    static func root(yaml: String, file: String) throws(ConfigurationError) -> YAMLSection {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(file, "not valid YAML: \(problem(error))")
        }
        guard let node else { return YAMLSection(mapping: [:], path: "", file: file) }
        guard case .mapping(let mapping) = node else { throw ConfigurationError(file, "the top level must be a mapping of keys") }
        return YAMLSection(mapping: mapping, path: "", file: file)
    }

    /// What Yams found wrong and where, without the text around it that its own description
    /// quotes: the line may hold a secret (`cluster.secret`, an upstream's header).
    private static func problem(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return "\(error)" }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            return "\(mark): " + (context.map { "\($0.text) (line \($0.mark.line)), " } ?? "") + problem
        case .reader(let problem, let offset, _, _):
            return "\(problem)" + (offset.map { " at character \($0)" } ?? "")
        default:
            return "\(error)"
        }
    }

    func location(_ key: String) -> String {
        "\(file): " + (path.isEmpty ? key : "\(path).\(key)")
    }

    /// Fails on keys ``Settings`` does not declare here (for a resource of `kind`, under `resources.*`).
    func allowOnlyDeclared(kind: ResourceKind? = nil) throws(ConfigurationError) {
        try allowOnly(Settings.keys(under: pattern, kind: kind))
    }

    /// Fails on keys this section does not know (a typo must not be silently ignored).
    func allowOnly(_ keys: Set<String>) throws(ConfigurationError) {
        for key in mapping.keys {
            let name = key.string ?? "\(key)"
            guard keys.contains(name) else {
                throw ConfigurationError(location(name), "unknown key (known here: \(keys.sorted().joined(separator: ", ")))")
            }
        }
    }

    private func scalar(_ key: String) throws(ConfigurationError) -> String? {
        guard let node = mapping[key] else { return nil }
        guard case .scalar(let scalar) = node else { throw ConfigurationError(location(key), "expected a single value") }
        return scalar.string
    }

    func string(_ key: String) throws(ConfigurationError) -> String? {
        try scalar(key)
    }

    func requiredString(_ key: String) throws(ConfigurationError) -> String {
        guard let value = try scalar(key), !value.isEmpty else { throw ConfigurationError(location(key), "required") }
        return value
    }

    /// A list of strings (`[a, b]` or a block sequence); a single value counts as a list of one.
    func strings(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let node = mapping[key] else { return nil }
        switch node {
        case .scalar(let scalar): return [scalar.string]
        case .sequence(let sequence):
            var values: [String] = []
            for element in sequence {
                guard case .scalar(let scalar) = element else { throw ConfigurationError(location(key), "expected a list of values") }
                values.append(scalar.string)
            }
            return values
        default: throw ConfigurationError(location(key), "expected a list of values")
        }
    }

    /// A whole number within `range` (``SettingType/whole(_:)``).
    func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        try SettingType<Int>.whole(range).read(self, key)
    }

    /// `true` or `false` (``SettingType/boolean``).
    func boolean(_ key: String) throws(ConfigurationError) -> Bool? {
        try SettingType<Bool>.boolean.read(self, key)
    }

    /// A duration (`250ms`, `5s`, `1m`, `1h`) within `range` (``SettingType/duration(_:)``).
    func duration(_ key: String, in range: ClosedRange<Duration>) throws(ConfigurationError) -> Duration? {
        try SettingType<Duration>.duration(range).read(self, key)
    }

    /// The pattern of `key` here, as ``Settings`` names it.
    func pattern(of key: String) -> String {
        pattern.isEmpty ? key : "\(pattern).\(key)"
    }

    func section(_ key: String) throws(ConfigurationError) -> YAMLSection? {
        guard let node = mapping[key] else { return nil }
        return try child(key, node)
    }

    func requiredSection(_ key: String) throws(ConfigurationError) -> YAMLSection {
        guard let section = try section(key) else { throw ConfigurationError(location(key), "required") }
        return section
    }

    /// The entries of a mapping of named sections, e.g. `upstreams`, in file order.
    ///
    /// Each entry's value is taken as it stands, not looked up again by its name: a quoted
    /// name that YAML would read as something else unquoted (`"42"`, `"true"`) would not find
    /// itself, and its entry was silently left out. Two entries of one name (`42` and `"42"`,
    /// which YAML tells apart) are refused, rather than one silently replacing the other.
    func namedSections() throws(ConfigurationError) -> [(name: String, section: YAMLSection)] {
        var result: [(name: String, section: YAMLSection)] = []
        for (key, value) in mapping {
            let name = key.string ?? "\(key)"
            guard !result.contains(where: { $0.name == name }) else { throw ConfigurationError(location(name), "named twice") }
            result.append((name, try child(name, value, patternKey: "*")))
        }
        return result
    }

    /// The mapping `node`, the value of `key`, as a section under this one.
    /// `patternKey` stands for `key` in the child's ``pattern`` (`*` for a chosen name).
    private func child(_ key: String, _ node: Node, patternKey: String? = nil) throws(ConfigurationError) -> YAMLSection {
        guard case .mapping(let child) = node else { throw ConfigurationError(location(key), "expected a mapping of keys") }
        return YAMLSection(mapping: child, path: path.isEmpty ? key : "\(path).\(key)", file: file, pattern: pattern(of: patternKey ?? key))
    }
}
