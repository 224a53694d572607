import CLibevent
import Glibc

/// Calls back once when a socket is reset or fails, while its owner has stopped reading it.
///
/// A socket that has sent EOF stays readable for good, so a level-triggered read event would
/// fire on every loop turn; and libevent will not mix edge- and level-triggered events on one
/// descriptor, which the socket's bufferevent already uses. So the watch registers an
/// edge-triggered read event on a duplicate of the descriptor (one open file, the same
/// socket): it wakes when the socket's state changes, such as a reset arriving, and never
/// spins. The duplicate is closed with the watch. Loop-confined.
///
/// ```swift
/// let watch = SocketResetWatch(loop: loop, socket: fd) { connectionIsGone() }
/// ```
package final class SocketResetWatch {
    private let duplicate: Int32
    private var event: OpaquePointer?
    private var action: (() -> Void)?

    /// Watches `socket`; `action` runs once, on the loop, when it is reset or fails (also
    /// right away if it already was). Nil when the descriptor cannot be duplicated.
    package init?(loop: EventLoop, socket: Int32, action: @escaping () -> Void) {
        duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else { return nil }
        self.action = action
        let context = Unmanaged.passUnretained(self).toOpaque()
        event = event_new(loop.base, duplicate, Int16(EV_READ | EV_ET | EV_PERSIST), { _, _, context in
            Unmanaged<SocketResetWatch>.fromOpaque(context!).takeUnretainedValue().changed()
        }, context)
        guard let event, event_add(event, nil) == 0 else {
            if let event { event_free(event) }
            close(duplicate)
            return nil
        }
    }

    deinit {
        if let event { event_free(event) }
        close(duplicate)
    }

    /// Whether the socket was reset, or failed: its pending error, or a closed TCP state.
    static func isReset(_ socket: Int32) -> Bool {
        var error: Int32 = 0
        var errorLength = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &errorLength) == 0 else { return true }
        if error != 0 { return true }
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(socket, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return true }
        return Int32(info.tcpi_state) == Int32(TCP_CLOSE)
    }

    private func changed() {
        guard Self.isReset(duplicate), let action else { return }
        self.action = nil
        if let event { event_del(event) }
        withExtendedLifetime(self) { action() }
    }
}
