package import CLibevent

/// Copies between Swift byte collections and libevent `evbuffer`s (which libevent owns).
package enum EventBuffer {
    package static func append(_ bytes: some Collection<UInt8>, to buffer: OpaquePointer) {
        let added = bytes.withContiguousStorageIfAvailable { storage in
            evbuffer_add(buffer, storage.baseAddress, storage.count)
        }
        if added == nil {
            let copy = Array(bytes)
            copy.withUnsafeBufferPointer { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
        }
    }

    /// Every byte in the buffer, copied; the buffer is left as it was.
    package static func bytes(of buffer: OpaquePointer) -> [UInt8] {
        let length = evbuffer_get_length(buffer)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: length) { storage, count in
            count = Int(evbuffer_copyout(buffer, storage.baseAddress, length))
        }
    }
}

/// Reads an `evkeyvalq` header list (evhttp's TAILQ of `evkeyval`).
package enum HeaderList {
    package static func entries(of list: UnsafeMutablePointer<evkeyvalq>?) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var entry = list?.pointee.tqh_first
        while let current = entry {
            result.append((String(cString: current.pointee.key), String(cString: current.pointee.value)))
            entry = current.pointee.next.tqe_next
        }
        return result
    }

    /// Adds `name: value` to `list`, optionally replacing the headers of that name first.
    /// `withCString` hands evhttp the strings' own bytes (a short string's on the stack):
    /// passing a `String` variable where C wants a `char *` copied a short one, which most
    /// header names and many values are, into a new heap array on every call.
    @inlinable
    package static func add(_ name: String, _ value: String, to list: UnsafeMutablePointer<evkeyvalq>?, replacing: Bool = false) {
        name.withCString { name in
            if replacing { evhttp_remove_header(list, name) }
            value.withCString { value in _ = evhttp_add_header(list, name, value) }
        }
    }

    /// Bytes the headers take on the wire (`name: value\r\n` each).
    package static func wireSize(of list: UnsafeMutablePointer<evkeyvalq>?) -> Int {
        var size = 0
        var entry = list?.pointee.tqh_first
        while let current = entry {
            size += strlen(current.pointee.key) + strlen(current.pointee.value) + 4
            entry = current.pointee.next.tqe_next
        }
        return size
    }
}
