/// One poke at a live stream's view model: a trigger with the request's query parameters, or
/// an input's new value. A value, not a closure, so that it can travel to the worker holding
/// the stream, or through Redis to the replica holding it.
///
/// ```swift
/// try StreamControl.trigger("loadMore", arguments: ["topic": "comedy"]).apply(to: view)
/// ```
package enum StreamControl: Sendable, Equatable {
    case trigger(String, arguments: [String: String])
    case input(String, value: String)

    /// The trigger's or input's name.
    package var name: String {
        switch self {
        case .trigger(let name, _), .input(let name, _): name
        }
    }

    package func apply(to view: any LiveViewModel) throws(ControlError) {
        switch self {
        case .trigger(let name, let arguments): try view.activate(name, arguments: arguments)
        case .input(let name, let value): try view.set(name, to: value)
        }
    }
}
