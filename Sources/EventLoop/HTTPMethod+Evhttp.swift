package import CLibevent
import HTTPCore

/// A method as evhttp names it: the server reads requests' methods this way, and the client's
/// HTTPS calls (on evhttp) write them.
extension HTTPMethod {
    package init?(_ command: evhttp_cmd_type) {
        switch command {
        case EVHTTP_REQ_GET: self = .get
        case EVHTTP_REQ_HEAD: self = .head
        case EVHTTP_REQ_POST: self = .post
        case EVHTTP_REQ_PUT: self = .put
        case EVHTTP_REQ_DELETE: self = .delete
        case EVHTTP_REQ_OPTIONS: self = .options
        case EVHTTP_REQ_TRACE: self = .trace
        case EVHTTP_REQ_CONNECT: self = .connect
        case EVHTTP_REQ_PATCH: self = .patch
        default: return nil
        }
    }

    package var command: evhttp_cmd_type {
        switch self {
        case .get: EVHTTP_REQ_GET
        case .head: EVHTTP_REQ_HEAD
        case .post: EVHTTP_REQ_POST
        case .put: EVHTTP_REQ_PUT
        case .delete: EVHTTP_REQ_DELETE
        case .options: EVHTTP_REQ_OPTIONS
        case .trace: EVHTTP_REQ_TRACE
        case .connect: EVHTTP_REQ_CONNECT
        case .patch: EVHTTP_REQ_PATCH
        }
    }

    /// Every method evhttp knows, so that the router (not evhttp) answers unknown routes.
    package static let allCommands: UInt16 = allCases.reduce(0) { $0 | UInt16($1.command.rawValue) }
}
