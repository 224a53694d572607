public import OpenCombine

/// One event a publisher sent: a value or a completion.
///
///     let event: RecordedEvent<Int, TestError> = .value(1)
public enum RecordedEvent<Value, Failure: Error> {
    case value(Value)
    case finished
    case failure(Failure)

    /// The event that `completion` is.
    ///
    ///     RecordedEvent<Int, Never>(.finished) // .finished
    public init(_ completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: self = .finished
        case let .failure(error): self = .failure(error)
        }
    }
}

extension RecordedEvent: Equatable where Value: Equatable, Failure: Equatable {}

extension RecordedEvent: CustomStringConvertible {
    /// A short description for test failure messages.
    public var description: String {
        switch self {
        case let .value(value): return "\(value)"
        case .finished: return "|"
        case let .failure(error): return "#\(error)"
        }
    }
}

/// An event and the marble frame it happened in.
///
///     TimedEvent<Int, Never>(frame: 2, event: .value(1))
public struct TimedEvent<Value, Failure: Error> {
    /// The marble frame (virtual second) of the event.
    public var frame: Int
    /// What happened.
    public var event: RecordedEvent<Value, Failure>

    /// Creates a timed event.
    public init(frame: Int, event: RecordedEvent<Value, Failure>) {
        self.frame = frame
        self.event = event
    }
}

extension TimedEvent: Equatable where Value: Equatable, Failure: Equatable {}

/// Events in time, written as a marble line.
///
/// Syntax, one character per frame (one virtual second), frames counted from 0:
/// - `-` nothing happens in this frame;
/// - `|` the publisher finishes; `#` it fails with `error`;
/// - `(ab|)` several events in the same frame (the group takes one frame);
/// - a space is ignored (use it to align lines);
/// - any other character is a value, looked up in `values` (for `String` outputs the
///   character itself is the value unless `values` says otherwise).
///
///     Timeline("-a--b-|", values: ["a": 1, "b": 2])   // 1 at frame 1, 2 at frame 4, finished at 6
///     Timeline<String, TestError>("-a-#", error: .boom)
///     Timeline<String, Never>("(ab)-c")              // a and b at frame 0, c at frame 2
public struct Timeline<Value, Failure: Error> {
    /// The events, in order.
    public var events: [TimedEvent<Value, Failure>]

    /// Creates a timeline from events.
    ///
    ///     Timeline<Int, Never>(events: [TimedEvent(frame: 0, event: .value(1))])
    public init(events: [TimedEvent<Value, Failure>]) {
        self.events = events
    }

    /// Parses a marble line.
    ///
    ///     let expected = Timeline("--a-|", values: ["a": 10])
    ///
    /// - Precondition: every value character is in `values`, and `#` appears only with an `error`.
    public init(_ marbles: String, values: [Character: Value], error: Failure? = nil) {
        self.init(marbles, error: error) { character in
            guard let value = values[character] else {
                preconditionFailure("Timeline: no value for marble '\(character)' in \"\(marbles)\"")
            }
            return value
        }
    }

    private init(_ marbles: String, error: Failure?, value: (Character) -> Value) {
        var events: [TimedEvent<Value, Failure>] = []
        var frame = 0
        var isGrouping = false
        for character in marbles {
            switch character {
            case " ":
                continue
            case "(":
                precondition(!isGrouping, "Timeline: nested group in \"\(marbles)\"")
                isGrouping = true
                continue
            case ")":
                precondition(isGrouping, "Timeline: unbalanced ')' in \"\(marbles)\"")
                isGrouping = false
            case "-":
                break
            case "|":
                events.append(TimedEvent(frame: frame, event: .finished))
            case "#":
                guard let error else {
                    preconditionFailure("Timeline: '#' without an error in \"\(marbles)\"")
                }
                events.append(TimedEvent(frame: frame, event: .failure(error)))
            default:
                events.append(TimedEvent(frame: frame, event: .value(value(character))))
            }
            if !isGrouping {
                frame += 1
            }
        }
        precondition(!isGrouping, "Timeline: unclosed group in \"\(marbles)\"")
        self.events = events
    }

    /// The values, in order.
    public var values: [Value] {
        events.compactMap { if case let .value(value) = $0.event { return value } else { return nil } }
    }
}

extension Timeline where Value == String {
    /// Parses a marble line whose values are the characters themselves (unless `values`
    /// maps some of them).
    ///
    ///     Timeline<String, Never>("-a-b-|")   // "a" at frame 1, "b" at frame 3
    public init(_ marbles: String, values: [Character: String] = [:], error: Failure? = nil) {
        self.init(marbles, error: error) { values[$0] ?? String($0) }
    }
}

extension Timeline: Equatable where Value: Equatable, Failure: Equatable {}

extension Timeline: CustomStringConvertible {
    /// The events frame by frame, e.g. `-a--b-|` or `-[1, 2]-|` (groups in parentheses).
    public var description: String {
        var text = ""
        var frame = 0
        var index = 0
        while index < events.count {
            let current = events[index].frame
            while frame < current {
                text += "-"
                frame += 1
            }
            let group = events[index...].prefix { $0.frame == current }
            let rendered = group.map(\.event.description)
            if rendered.count == 1 {
                text += rendered[0]
            } else {
                let isCompact = rendered.allSatisfy { $0.count == 1 }
                text += "(" + rendered.joined(separator: isCompact ? "" : ", ") + ")"
            }
            index += group.count
            frame += 1
        }
        return text
    }
}
