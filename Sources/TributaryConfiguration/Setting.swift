/// One setting as ``Settings`` declares it: its key, what it takes (and its range), its
/// default, the environment variable and command-line option that override it, whether a
/// reload applies it, and what it means. Everything else follows from it: the keys a section
/// allows, the docs' tables (docs/configuration.md, compared by a test), `--help`, the
/// environment's mapping, and what a reload keeps.
///
/// ```swift
/// Field("maxHeaderBytes", \.maxHeaderBytes, .whole(1024...1 << 20), reload: .restart, "larger request headers get 431")
/// ```
struct Setting: Sendable {
    /// The key path, `*` for a name the file chooses: `server.listen`, `upstreams.*.timeout`.
    var key: String
    /// The resource kinds that take it (`resources.*` keys only; nil: every kind, or not a resource's).
    var kinds: [ResourceKind]? = nil
    /// Its default as the docs show it.
    var defaultText: String
    var bounds: Bounds? = nil
    /// `TRIBUTARY_LISTEN`, `TRIBUTARY_UPSTREAM_<NAME>`.
    var environment: String? = nil
    /// How the environment writes it when not as the file does (`comma-separated`).
    var environmentForm: String? = nil
    /// `--listen HOST:PORT`.
    var option: String? = nil
    var reload = Reload.live
    /// One line of Markdown, docs/configuration.md's "meaning".
    var meaning: String

    /// A key a hand-written reader takes (a section, a list of mappings, a path checked
    /// against other keys): declared so that its section allows it and the docs list it.
    init(_ key: String, kinds: [ResourceKind]? = nil, default defaultText: String, _ meaning: String) {
        self.key = key
        self.kinds = kinds
        self.defaultText = defaultText
        self.meaning = meaning
    }

    /// `--listen`.
    var optionName: String? { option.flatMap { $0.split(separator: " ").first.map(String.init) } }

    /// `key` under `prefix` (`server` + `listen`), for the kinds given; a section that only a
    /// restart applies makes each of its keys restart-only.
    func under(_ prefix: String, kinds: [ResourceKind]? = nil, reload sectionReload: Reload? = nil) -> Setting {
        var setting = self
        setting.key = prefix.isEmpty ? key : "\(prefix).\(key)"
        setting.kinds = kinds ?? self.kinds
        setting.reload = sectionReload ?? reload
        return setting
    }

    /// The range of a number: whole, a duration, or requests per second (`N/s`, `N/m`, `N/h`).
    enum Bounds: Sendable, Equatable {
        case whole(ClosedRange<Int>)
        case duration(ClosedRange<Duration>)
        case rate(ClosedRange<Double>)
    }
}

/// Whether a reload (`SIGHUP`) applies a setting to the running process, or only a restart:
/// the listening socket, the threads, the logger, the server's limits, the event stream
/// hub's timer and the fleet's Redis link are made once, at start.
enum Reload: String, Sendable {
    case live
    case restart
}

/// The kinds of resource (`resources.<name>.kind`).
enum ResourceKind: String, Sendable, CaseIterable {
    case list, pages, search
}

/// What a setting takes, as the file, the environment and the command line write it: how a
/// written value is read (throwing, naming where it was written), and how a default is shown.
struct SettingType<Value>: Sendable {
    /// The value `text` says, written at `location`; nil when it says "unset" (an empty
    /// secret), which leaves the setting as it was.
    let parse: @Sendable (_ text: String, _ location: String) throws(ConfigurationError) -> Value?
    /// The value at `key` of a file's section; nil when absent. By default its scalar, parsed.
    let read: @Sendable (_ section: YAMLSection, _ key: String) throws(ConfigurationError) -> Value?
    /// A value as the docs show it.
    let show: @Sendable (Value) -> String
    let bounds: Setting.Bounds?
    /// How the environment writes it, when not as the file does.
    var environmentForm: String? = nil

    init(
        bounds: Setting.Bounds? = nil, show: @escaping @Sendable (Value) -> String = { "`\($0)`" },
        read: (@Sendable (YAMLSection, String) throws(ConfigurationError) -> Value?)? = nil,
        parse: @escaping @Sendable (String, String) throws(ConfigurationError) -> Value?
    ) {
        self.parse = parse
        self.bounds = bounds
        self.show = show
        if let read {
            self.read = read
        } else {
            self.read = { section, key throws(ConfigurationError) in
                guard let text = try section.string(key) else { return nil }
                return try parse(text, section.location(key))
            }
        }
    }
}

/// A setting of a section's type `Root` (``Configuration/Server``, an upstream's
/// ``Configuration/UpstreamSettings``…): its declaration, and how a value written for it is
/// put in place. Its default is `Root.defaults`' value: the type's own initial value, written
/// once, which the docs show.
struct Field<Root: SettingsSection>: Sendable {
    private(set) var setting: Setting
    /// How two values of it compare, and how a reload keeps the running one (a field's only).
    let rule: (differs: @Sendable (Root, Root) -> Bool, keep: @Sendable (inout Root, Root) -> Void)?
    /// Reads the key from the file's section of `Root` (a key `a.b` from its mapping `a`) into `root`.
    let read: @Sendable (YAMLSection, inout Root) throws(ConfigurationError) -> Void
    /// Puts the value `text` says (the environment's, the command line's) into `root`.
    let override: @Sendable (_ text: String, _ location: String, inout Root) throws(ConfigurationError) -> Void

    /// The setting at `key` (relative to its section) held in `root[keyPath: path]`.
    init<Value: Sendable & Equatable>(
        _ key: String, _ path: any WritableKeyPath<Root, Value> & Sendable, _ type: SettingType<Value>,
        default defaultText: String? = nil, environment: String? = nil, option: String? = nil, reload: Reload = .live,
        _ meaning: String
    ) {
        self.init(
            key, type, default: defaultText ?? type.show(Root.defaults[keyPath: path]), reload: reload, meaning,
            rule: ({ $0[keyPath: path] != $1[keyPath: path] }, { $0[keyPath: path] = $1[keyPath: path] })
        ) { root, value in root[keyPath: path] = value }
        (setting.environment, setting.option) = (environment, option)
    }

    /// The setting at `key` that `set` puts in place (a value that is not one field's).
    init<Value: Sendable>(
        _ key: String, _ type: SettingType<Value>, default defaultText: String, reload: Reload = .live, _ meaning: String,
        rule: (differs: @Sendable (Root, Root) -> Bool, keep: @Sendable (inout Root, Root) -> Void)? = nil,
        set: @escaping @Sendable (inout Root, Value) -> Void
    ) {
        self.rule = rule
        setting = Setting(key, default: defaultText, meaning)
        (setting.bounds, setting.environmentForm, setting.reload) = (type.bounds, type.environmentForm, reload)
        let components = key.split(separator: ".").map(String.init)
        read = { section, root throws(ConfigurationError) in
            var section = section
            for name in components.dropLast() {
                guard let inner = try section.section(name) else { return }
                section = inner
            }
            if let value = try type.read(section, components.last!) { set(&root, value) }
        }
        override = { text, location, root throws(ConfigurationError) in
            if let value = try type.parse(text, location) { set(&root, value) }
        }
    }
}

/// A type whose fields are settings (``Field``): `defaults` holds each one's default.
protocol SettingsSection: Sendable {
    static var defaults: Self { get }
}

extension Array {
    /// Reads every field of `Root` that `section` (the file's mapping of a `Root`) sets into `root`.
    func read<Root>(_ section: YAMLSection, into root: inout Root) throws(ConfigurationError) where Element == Field<Root> {
        for field in self { try field.read(section, &root) }
    }

    /// `Root.defaults` with every field `section` sets.
    func read<Root>(_ section: YAMLSection) throws(ConfigurationError) -> Root where Element == Field<Root> {
        var root = Root.defaults
        try read(section, into: &root)
        return root
    }
}
