import CLibevent
import Glibc

/// Runs an action on the loop when the process receives a signal (SIGINT, SIGTERM, ...),
/// through a libevent signal event, so the action runs as an ordinary loop callback rather
/// than inside a signal handler. Loop-confined; dropping the watcher stops watching.
///
/// libevent delivers a signal to one `event_base` per process: watch signals on one loop.
/// The signal is unblocked on the calling thread (make the watcher on the loop's thread): a
/// process can inherit a mask that blocks it, e.g. when spawned from a thread of a dispatch
/// pool, and a signal blocked everywhere never reaches libevent's handler.
///
/// ```swift
/// let onTerm = try SignalWatcher(loop: loop, signal: SIGTERM) { server.shutDown() }
/// ```
public final class SignalWatcher {
    public let loop: EventLoop
    public let signal: Int32
    private let action: () -> Void
    private var event: OpaquePointer!

    public init(loop: EventLoop, signal: Int32, action: @escaping () -> Void) throws(LibeventError) {
        self.loop = loop
        self.signal = signal
        self.action = action
        let context = Unmanaged.passUnretained(self).toOpaque()
        event = try LibeventError.unwrap(
            event_new(loop.base, signal, Int16(EV_SIGNAL | EV_PERSIST), { _, _, context in
                Unmanaged<SignalWatcher>.fromOpaque(context!).takeUnretainedValue().action()
            }, context),
            "event_new", detail: "signal \(signal)")
        try LibeventError.check(event_add(event, nil), "event_add", detail: "signal \(signal)")
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, signal)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    deinit {
        event_free(event)
    }
}
