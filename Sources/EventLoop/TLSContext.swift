import CLibevent

/// An OpenSSL `SSL_CTX` for HTTPS, as a client (verifying the server's certificate and name,
/// sending SNI) or as a server (presenting a certificate chain). Shared by every connection
/// made with it; freed with the last reference.
///
/// ```swift
/// let trust = try TLSContext.client(caFile: "/etc/tributary/ca.pem")   // nil: system CAs
/// let client = UpstreamClient(loop: loop, configuration: .init(tls: trust))
/// ```
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    private init(context: OpaquePointer) {
        self.context = context
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// A client context that verifies peers against `caFile` (PEM), or the system's CAs.
    public static func client(caFile: String? = nil) throws(TLSError) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSError.fromQueue("SSL_CTX_new") }
        let tls = TLSContext(context: context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let loaded = caFile.map { SSL_CTX_load_verify_locations(context, $0, nil) } ?? SSL_CTX_set_default_verify_paths(context)
        guard loaded == 1 else { throw TLSError.fromQueue("loading CA certificates from \(caFile ?? "the system store")") }
        return tls
    }

    /// A server context presenting `certificateChainFile` with `privateKeyFile` (both PEM).
    public static func server(certificateChainFile: String, privateKeyFile: String) throws(TLSError) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSError.fromQueue("SSL_CTX_new") }
        let tls = TLSContext(context: context)
        guard SSL_CTX_use_certificate_chain_file(context, certificateChainFile) == 1 else {
            throw TLSError.fromQueue("loading certificate chain \(certificateChainFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError.fromQueue("loading private key \(privateKeyFile)")
        }
        return tls
    }

    /// A bufferevent for one outgoing connection to `host`: SNI (for names, not IP literals)
    /// and verification of the certificate against `host`.
    package func clientBufferEvent(base: OpaquePointer, host: String) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        let parameters = SSL_get0_param(ssl)
        if host.isIPAddressLiteral {
            X509_VERIFY_PARAM_set1_ip_asc(parameters, host)
        } else {
            // SSL_set_tlsext_host_name is a macro Swift cannot import.
            _ = host.withCString { SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) }
            X509_VERIFY_PARAM_set1_host(parameters, host, 0)
        }
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard let bufferEvent = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options) else {
            SSL_free(ssl)
            return nil
        }
        return bufferEvent
    }

    /// A bufferevent for one accepted connection (evhttp sets its socket).
    package func serverBufferEvent(base: OpaquePointer) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        guard let bufferEvent = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, options) else {
            SSL_free(ssl)
            return nil
        }
        return bufferEvent
    }
}

/// A TLS set-up failure, with OpenSSL's reason.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public let description: String

    /// Describes `what` with the oldest error on OpenSSL's thread-local queue, then clears it.
    static func fromQueue(_ what: String) -> TLSError {
        let code = ERR_get_error()
        ERR_clear_error()
        return TLSError(description: "\(what) failed" + (code == 0 ? "" : ": \(openSSLReason(code))"))
    }

    package static func openSSLReason(_ code: UInt) -> String {
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    /// Whether this is an IPv4 or IPv6 address literal rather than a host name.
    package var isIPAddressLiteral: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}
