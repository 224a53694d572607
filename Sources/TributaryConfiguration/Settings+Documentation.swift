/// What the declarations say to people: docs/configuration.md's tables (generated text, which
/// a test compares with the file and rewrites with `TRIBUTARY_UPDATE_DOCS=1`) and the
/// `--help` of the command-line options that set a setting.
extension Settings {
    /// The main table: every key but those of one kind of resource.
    static var markdownTable: String {
        var lines = ["| key | default | override | on reload | meaning |", "|---|---|---|---|---|"]
        for setting in all where setting.kinds == nil {
            lines.append("| `\(display(setting.key))` | \(setting.defaultText) | \(overrides(of: setting)) | \(setting.reload.rawValue) | \(setting.meaning) |")
        }
        return lines.joined(separator: "\n")
    }

    /// The table of the keys a resource of `kind` takes besides every resource's, relative to
    /// the resource (a reload applies them all).
    static func markdownTable(of kind: ResourceKind) -> String {
        let keys = all.filter { $0.kinds?.contains(kind) == true }.map { (key: String($0.key.dropFirst("resources.*.".count)), setting: $0) }
        // The keys of one mapping together (`list.path`, read by hand, beside `list.items`),
        // the mappings in the order they first appear, the resource's own keys last.
        let mapping = { (key: String) in key.split(separator: ".").dropLast().joined(separator: ".") }
        var order: [String] = []
        for (key, _) in keys where !order.contains(mapping(key)) && !mapping(key).isEmpty { order.append(mapping(key)) }
        order.append("")
        var lines = ["| key | default | meaning |", "|---|---|---|"]
        for group in order {
            for (key, setting) in keys where mapping(key) == group {
                lines.append("| `\(display(key))` | \(setting.defaultText) | \(setting.meaning) |")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The "Ranges" table: every number's range, each key once.
    static var rangesTable: String {
        var lines = ["| key | accepted |", "|---|---|"]
        var seen: Set<String> = []
        for setting in all {
            guard let bounds = setting.bounds, seen.insert(setting.key).inserted else { continue }
            lines.append("| `\(display(setting.key))` | \(Setting.describe(bounds)) |")
        }
        return lines.joined(separator: "\n")
    }

    /// A key as the docs write it: `resources.<name>.parameters.<p>`.
    static func display(_ key: String) -> String {
        key.replacing("parameters.*", with: "parameters.<p>").replacing("*", with: "<name>")
    }

    private static func overrides(of setting: Setting) -> String {
        let environment = setting.environment.map { "`\($0)`" + (setting.environmentForm.map { " (\($0))" } ?? "") }
        return [environment, setting.option.map { "`\($0)`" }].compactMap { $0 }.joined(separator: ", ")
    }

    /// The `--help` of option `name` (`--listen`): what its setting means, its variable and its
    /// key; and the name of its value (`HOST:PORT`).
    static func help(option name: String) -> (text: String, valueName: String?) {
        guard let setting = all.first(where: { $0.optionName == name }) else { return ("", nil) }
        let meaning = plain(setting.meaning)
        let sources = (setting.environment.map { ["env \($0)"] } ?? []) + ["config \(display(setting.key))"]
        let valueName = setting.option?.split(separator: " ").dropFirst().first.map(String.init)
        // A sentence, unless it starts with a value (`trace`, `redis://…`), which keeps its case.
        let sentence = setting.meaning.hasPrefix("`") ? meaning : meaning.prefix(1).uppercased() + meaning.dropFirst()
        return (sentence + " (\(sources.joined(separator: "; "))).", valueName)
    }

    /// Markdown as a terminal shows it: no backticks, links as their text.
    private static func plain(_ markdown: String) -> String {
        markdown.replacing("`", with: "").replacing(/\[([^\]]*)\]\([^)]*\)/) { String($0.output.1) }
    }
}

extension Configuration {
    /// The `--help` of the command-line option `name` (`--listen`) that sets a setting, from
    /// its declaration; and its value's name (`HOST:PORT`).
    public static func help(option name: String) -> (text: String, valueName: String?) {
        Settings.help(option: name)
    }
}
