import HTTPServer
import TributaryConfiguration

/// How a stream sends each new document, as its `updates` query parameter asks: whole
/// (`snapshot` events, the default) or, with `updates=patch`, as an RFC 6902 JSON Patch
/// from the document the client has (`patch` events; see ``EventFeed``). On `GET /events`
/// it applies to every resource of the stream.
///
/// ```swift
/// try EventUpdates(parameter: request.queryParameters["updates"])   // .patches for "patch"
/// ```
enum EventUpdates: Equatable {
    case snapshots
    case patches

    /// The parameter's name, and its values in the API description.
    static var parameter: String { ServiceQueryParameter.updates }
    static let values = ["snapshot", "patch"]

    /// The mode `value` names; none (or empty: an empty query value counts as absent) is
    /// ``snapshots``. Any other value is refused before the stream starts: 400
    /// `invalid_parameter`, naming the parameter.
    init(parameter value: String?) throws(HTTPError) {
        switch value {
        case nil, "", "snapshot": self = .snapshots
        case "patch": self = .patches
        default:
            throw HTTPError(status: 400, code: "invalid_parameter",
                            message: "\(Self.parameter) must be one of: \(Self.values.joined(separator: ", "))")
        }
    }

    /// Why a JSON answer refuses `request`: its `updates` names no mode. A JSON answer has no
    /// updates, but a URL that names a mode that does not exist is wrong for either. A request
    /// without a query (most) is not looked at further.
    static func refusal(of request: ServerRequest) -> HTTPError? {
        guard request.query != nil else { return nil }
        do throws(HTTPError) {
            _ = try EventUpdates(parameter: request.queryParameters[parameter])
            return nil
        } catch {
            return error
        }
    }
}
