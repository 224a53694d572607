/// The members kept of each element of a document's array: `fields=id,name,owner.login` on a
/// JSON GET or a stream, or a resource's `fields:` setting (DESIGN.md, part 4, "Projected
/// fields"). A page that shows names and counts then neither pays for the members it does not
/// show nor is woken when only those change.
///
/// - A name keeps that member of each element, in the element's own order; a dotted name
///   (`owner.login`) keeps one member inside its parent object (inside each object of a parent
///   array), the parent keeping only what is named of it. A member an element lacks is absent;
///   a dotted name whose parent is neither an object nor an array keeps nothing of it.
/// - Members named in `always` (the `error` of a failed item, the `pending` marker) are kept
///   whatever is asked.
/// - Names compare by their bytes, as everything shared is keyed (part 3): `K` and the Kelvin
///   sign are two names.
/// - Two selections that keep the same members are equal and hash alike, whatever the order or
///   repetition of their names (`owner` already keeps `owner.login`), so the subscribers asking
///   for the same fields share one projected document.
///
/// ```swift
/// let fields = try FieldSelection(parsing: "name,owner.login,id")
/// let document = try JSON(parsing: Array(#"[{"id":1,"owner":{"id":2,"login":"a"},"x":0}]"#.utf8))
/// fields.projecting(document).serialized      // [{"id":1,"owner":{"login":"a"}}]
/// ```
public struct FieldSelection: Hashable, Sendable, CustomStringConvertible {
    /// Names in one selection at most: each is a lookup in every element of every document.
    public static let maximumNames = 64
    /// Bytes in one name at most, dots included.
    public static let maximumNameBytes = 128
    /// The parameter that asks for a selection (`groups.fields` on `GET /events`).
    public static let parameter = "fields"

    /// What is kept of one member: all of it, or only some of its own members.
    private indirect enum Kept: Hashable, Sendable {
        case whole
        case only([ExactText: Kept])
    }

    /// What is kept of each element, by member name; nil keeps everything.
    private let members: [ExactText: Kept]?

    /// Every member of every element: no projection at all.
    public static let everything = FieldSelection(members: nil)

    private init(members: [ExactText: Kept]?) {
        self.members = members
    }

    /// The selection `text` names: names separated by commas, each at most
    /// ``maximumNameBytes`` bytes, at most ``maximumNames`` of them, none empty (nor empty
    /// between dots). The error says what is wrong, never echoing a name.
    public init(parsing text: String) throws(FieldSelectionError) {
        let names = text.split(separator: ",", omittingEmptySubsequences: false)
        guard names.count <= Self.maximumNames else {
            throw FieldSelectionError("has \(names.count) names; at most \(Self.maximumNames)")
        }
        var members: [ExactText: Kept] = [:]
        for name in names {
            guard name.utf8.count <= Self.maximumNameBytes else {
                throw FieldSelectionError("has a name longer than \(Self.maximumNameBytes) bytes")
            }
            let path = name.split(separator: ".", omittingEmptySubsequences: false)
            guard !path.contains(where: \.isEmpty) else {
                throw FieldSelectionError("has an empty name: names are separated by commas, and a nested one by dots (owner.login)")
            }
            Self.keep(path.map { ExactText(String($0)) }[...], in: &members)
        }
        self.init(members: members)
    }

    /// The selection of `names` (a resource's `fields:` setting), checked as ``init(parsing:)``
    /// checks a query's.
    public init(names: [String]) throws(FieldSelectionError) {
        guard !names.isEmpty else { throw FieldSelectionError("names no member: leave it out to keep every member") }
        guard !names.contains(where: { $0.contains(",") }) else { throw FieldSelectionError("has a name with a comma") }
        try self.init(parsing: names.joined(separator: ","))
    }

    /// Adds the member at `path` to `members`: a whole member absorbs every nested one.
    private static func keep(_ path: ArraySlice<ExactText>, in members: inout [ExactText: Kept]) {
        guard let first = path.first else { return }
        let rest = path.dropFirst()
        if rest.isEmpty {
            members[first] = .whole
            return
        }
        switch members[first] {
        case .whole: return
        case .only(var nested):
            keep(rest, in: &nested)
            members[first] = .only(nested)
        case nil:
            var nested: [ExactText: Kept] = [:]
            keep(rest, in: &nested)
            members[first] = .only(nested)
        }
    }

    /// Whether it keeps every member (nothing to project).
    public var keepsEverything: Bool { members == nil }

    /// The names it keeps, sorted by their bytes, dotted where nested: its canonical text.
    public var names: [String] {
        guard let members else { return [] }
        return Self.names(of: members, prefix: "").sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private static func names(of members: [ExactText: Kept], prefix: String) -> [String] {
        members.flatMap { name, kept -> [String] in
            switch kept {
            case .whole: [prefix + name.text]
            case .only(let nested): names(of: nested, prefix: prefix + name.text + ".")
            }
        }
    }

    public var description: String { keepsEverything ? "*" : names.joined(separator: ",") }

    /// What both keep: a client's `fields` within what its resource serves. A member one keeps
    /// whole and the other in part is kept in part; one whose parts do not meet is not kept.
    public func intersection(_ other: FieldSelection) -> FieldSelection {
        guard let members else { return other }
        guard let others = other.members else { return self }
        return FieldSelection(members: Self.intersection(members, others))
    }

    private static func intersection(_ a: [ExactText: Kept], _ b: [ExactText: Kept]) -> [ExactText: Kept] {
        var result: [ExactText: Kept] = [:]
        for (name, kept) in a {
            switch (kept, b[name]) {
            case (_, nil): continue
            case (.whole, let other?): result[name] = other
            case (let mine, .whole): result[name] = mine
            case (.only(let mine), .only(let theirs)):
                let nested = intersection(mine, theirs)
                if !nested.isEmpty { result[name] = .only(nested) }
            }
        }
        return result
    }

    /// `document` with only the kept members of each element of its array (and of the members
    /// named in `always`); a document that is not an array is projected as one element.
    public func projecting(_ document: JSON, always: [String] = ["error"]) -> JSON {
        guard let members else { return document }
        let always = always.map(ExactText.init)
        if case .array(let elements) = document {
            return .array(elements.map { Self.projecting($0, members, always: always) })
        }
        return Self.projecting(document, members, always: always)
    }

    /// What `element` keeps: its kept members if an object, each of its elements projected if an
    /// array, itself otherwise.
    private static func projecting(_ element: JSON, _ kept: [ExactText: Kept], always: [ExactText] = []) -> JSON {
        if case .array(let elements) = element {
            return .array(elements.map { projecting($0, kept, always: always) })
        }
        guard let objectMembers = element.objectValue else { return element }
        var projected: [(key: String, value: JSON)] = []
        for (key, value) in objectMembers {
            let name = ExactText(key)
            switch kept[name] {
            case .whole: projected.append((key, value))
            case .only(let nested):
                if value.objectValue != nil || value.arrayValue != nil { projected.append((key, projecting(value, nested))) }
            case nil:
                if always.contains(name) { projected.append((key, value)) }
            }
        }
        return .object(projected)
    }
}

/// Why a `fields` list was refused (a 400 `invalid_parameter` naming `fields`, or a
/// configuration error naming `resources.NAME.fields`): what is wrong, after the name.
public struct FieldSelectionError: Error, Equatable, Sendable {
    /// E.g. "has an empty name: …", to follow "fields ".
    public let problem: String

    init(_ problem: String) {
        self.problem = problem
    }
}

extension FieldSelection {
    /// `snapshot` as these fields show it: its document projected, and so a version of its own
    /// (two selections that leave the same bytes share it, and with it every event made of it).
    public func projecting(_ snapshot: Snapshot, always: [String] = ["error"]) -> Snapshot {
        guard !keepsEverything, let document = try? JSON(parsing: snapshot.json, keeping: .objects) else { return snapshot }
        return Snapshot(projecting(document, always: always))
    }

    /// `state` as these fields show it: its snapshot projected; its error and inputs as they are.
    public func projecting(_ state: LiveState, always: [String] = ["error"]) -> LiveState {
        guard !keepsEverything, let snapshot = state.snapshot else { return state }
        return LiveState(snapshot: projecting(snapshot, always: always), error: state.error, inputs: state.inputs, pending: state.pending)
    }
}
