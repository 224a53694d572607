import HTTPServer
import TributaryConfiguration

/// Whether a stream shows a pipeline's first document progressively, as its `progressive`
/// query parameter asks (DESIGN.md, part 4): with `true`, the list as soon as it is known,
/// the items still waiting for their details marked pending, then the rest as it arrives;
/// else only complete documents (a stream that joins a pipeline still making its first
/// waits for it). On `GET /events` it applies to every resource of the stream; resources
/// that are not lists have no partial documents.
enum ProgressiveDocuments {
    static var parameter: String { ServiceQueryParameter.progressive }
    static let values = ["true", "false"]

    /// Whether `value` asks for progressive documents: `true`; none, empty or `false` does
    /// not. Any other value is refused before the stream starts: 400 `invalid_parameter`,
    /// naming the parameter.
    static func asked(_ value: String?) throws(HTTPError) -> Bool {
        switch value {
        case nil, "", "false": return false
        case "true": return true
        default:
            throw HTTPError(status: 400, code: "invalid_parameter", message: "\(parameter) must be one of: \(values.joined(separator: ", "))")
        }
    }

    /// Why a JSON answer refuses `request`: its `progressive` is neither value (as for
    /// ``EventUpdates/refusal(of:)``: a JSON answer is complete either way, but a URL that
    /// says something that does not exist is wrong for either).
    static func refusal(of request: ServerRequest) -> HTTPError? {
        guard request.query != nil else { return nil }
        do throws(HTTPError) {
            _ = try asked(request.queryParameters[parameter])
            return nil
        } catch {
            return error
        }
    }
}
