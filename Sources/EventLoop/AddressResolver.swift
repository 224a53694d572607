import CLibevent
import Glibc

/// Host name to IP address on the loop, with libevent's evdns: the blocking `getaddrinfo`
/// (which hiredis' own connect would call) stalls the worker for as long as DNS takes. Used by
/// the upstream client's plain-HTTP connections and by the Redis link. Names in
/// `/etc/hosts` are answered from the file; others ask the nameservers of `/etc/resolv.conf`.
/// Loop-confined.
///
/// The `evdns_base` is freed in `deinit`, which cannot happen while a lookup is outstanding:
/// every ``Request`` holds its resolver until libevent has called it back.
///
/// ```swift
/// let request = resolver.resolve("redis.internal", port: 6379) { result in … }   // "10.0.0.5"
/// request.cancel()
/// ```
package final class AddressResolver {
    /// Why a host name has no address.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
    }

    package let loop: EventLoop
    /// The `evdns_base`, also for evhttp's own connects (it lives as long as the resolver).
    package let base: OpaquePointer

    package init(loop: EventLoop) throws(Failure) {
        guard let base = evdns_base_new(loop.base, EVDNS_BASE_INITIALIZE_NAMESERVERS) else {
            throw Failure(description: "evdns_base_new failed (no usable /etc/resolv.conf?)")
        }
        self.loop = loop
        self.base = base
    }

    deinit {
        evdns_base_free(base, 0)
    }

    /// Starts a lookup; `completion` runs on a later loop turn with an IP address (IPv4
    /// preferred) unless the request is cancelled first.
    package func resolve(_ host: String, port: UInt16, completion: @escaping (Result<String, Failure>) -> Void) -> Request {
        let request = Request(resolver: self, host: host, completion: completion)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // The C side holds the request (and so this resolver) until its callback, which
        // evdns always makes: with an answer, an error, or EVUTIL_EAI_CANCEL.
        let context = Unmanaged.passRetained(request).toOpaque()
        let handle = evdns_getaddrinfo(base, host, String(port), &hints, { status, addresses, context in
            let request = Unmanaged<Request>.fromOpaque(context!).takeRetainedValue()
            request.answered(status: status, addresses: addresses)
        }, context)
        // Answered already (hosts file, or an immediate failure) when evdns returns NULL.
        if !request.isAnswered { request.handle = handle }
        return request
    }

    /// One lookup. Loop-confined.
    package final class Request {
        private let resolver: AddressResolver
        package let host: String
        private var completion: ((Result<String, Failure>) -> Void)?
        /// evdns' request while libevent may still call back.
        fileprivate var handle: OpaquePointer?
        fileprivate private(set) var isAnswered = false

        fileprivate init(resolver: AddressResolver, host: String, completion: @escaping (Result<String, Failure>) -> Void) {
            self.resolver = resolver
            self.host = host
            self.completion = completion
        }

        /// Drops the lookup; the completion handler is not called.
        package func cancel() {
            completion = nil
            if let handle {
                self.handle = nil
                evdns_getaddrinfo_cancel(handle)
            }
        }

        /// evdns' callback, possibly from inside `evdns_getaddrinfo`: the answer is delivered
        /// on the next loop turn, outside evdns (which may free the resolver it runs in).
        fileprivate func answered(status: Int32, addresses: UnsafeMutablePointer<addrinfo>?) {
            isAnswered = true
            handle = nil
            let result: Result<String, Failure>
            if status == 0, let address = Self.preferredAddress(addresses) {
                result = .success(address)
            } else {
                let reason = status == 0 ? "no address" : String(cString: evutil_gai_strerror(status))
                result = .failure(Failure(description: "cannot resolve \(host): \(reason)"))
            }
            if let addresses { evutil_freeaddrinfo(addresses) }
            // Also after a cancel: this closure, not the callback, drops the last reference.
            resolver.loop.deferred { [self] in
                let completion = self.completion
                self.completion = nil
                completion?(result)
            }
        }

        /// The first IPv4 address, else the first IPv6 one, as text.
        private static func preferredAddress(_ list: UnsafeMutablePointer<addrinfo>?) -> String? {
            var entries: [UnsafeMutablePointer<addrinfo>] = []
            var entry = list
            while let current = entry {
                entries.append(current)
                entry = current.pointee.ai_next
            }
            let chosen = entries.first { $0.pointee.ai_family == AF_INET } ?? entries.first { $0.pointee.ai_family == AF_INET6 }
            guard let chosen, let address = chosen.pointee.ai_addr else { return nil }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let written = text.withUnsafeMutableBufferPointer { text in
                if chosen.pointee.ai_family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                        var raw = ipv4.pointee.sin_addr
                        return inet_ntop(AF_INET, &raw, text.baseAddress, socklen_t(text.count)) != nil
                    }
                } else {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                        var raw = ipv6.pointee.sin6_addr
                        return inet_ntop(AF_INET6, &raw, text.baseAddress, socklen_t(text.count)) != nil
                    }
                }
            }
            guard written else { return nil }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
