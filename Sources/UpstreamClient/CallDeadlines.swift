import EventLoop
/// The deadlines of one client's calls: for each distinct timeout, a line of the calls that
/// have it, in the order they started, and one timer for the line's oldest call.
/// Loop-confined.
///
/// A call almost always ends long before its deadline. A timer of its own per call cost an
/// allocation, `event_new`, `event_add` and `event_del`; here a call costs an append to its
/// line, and the line's timer fires about once per timeout, whatever the number of calls.
/// The calls of one line start one after the other with the same timeout, so their
/// deadlines come in the same order: the line's first live call is always the next one due.
///
/// Calls that ended stay in their line until they reach its front or, when they outnumber
/// the live ones, until the line is compacted: a call that hangs at the front cannot make
/// its line hold every call that ended behind it until its deadline.
final class CallDeadlines {
    private final class Line {
        let timeout: Duration
        /// `timeout` in nanoseconds: a call's deadline is that long after its start.
        let timeoutNanoseconds: Int64
        /// The calls in the order they started, from `head` on.
        var calls: ContiguousArray<UpstreamCall> = []
        var head = 0
        /// Calls from `head` on that have ended.
        var ended = 0
        var timer: LoopTimer?
        var isArmed = false
        /// While the line fires, it is read by index: no compaction then.
        var isFiring = false

        init(timeout: Duration) {
            self.timeout = timeout
            timeoutNanoseconds = MonotonicInstant.nanoseconds(of: timeout)
        }

        /// When `call`'s deadline passes.
        func due(_ call: UpstreamCall) -> MonotonicInstant {
            call.startedAt.advanced(byNanoseconds: timeoutNanoseconds)
        }

        var liveCount: Int { calls.count - head - ended }
    }

    private let loop: EventLoop
    private var lines: [Line] = []
    /// The line the last call joined: calls come in runs of one timeout.
    private var lastLine: Line?

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Calls in a line (live or ended, not yet dropped): what the lines cost in memory.
    var entryCount: Int { lines.reduce(0) { $0 + $1.calls.count - $1.head } }

    /// Starts `call`'s deadline (``UpstreamRequest/timeout`` after
    /// it started): once passed, the line calls ``UpstreamCall/deadlinePassed()``, unless the
    /// call reported ``ended(_:)`` before.
    func start(_ call: UpstreamCall) {
        let line = self.line(for: call.request.timeout)
        line.calls.append(call)
        if !line.isArmed { arm(line, after: line.timeout) }
    }

    /// `call` ended before its deadline (it must not be reported twice).
    func ended(_ call: UpstreamCall) {
        let line = self.line(for: call.request.timeout)
        line.ended += 1
        guard !line.isFiring else { return }
        if line.head < line.calls.count, line.calls[line.head] === call {
            dropEndedAtFront(of: line)
        } else if line.ended > 32 && line.ended > line.liveCount {
            // The front call hangs while later ones end: they go now, not at its deadline.
            line.calls = ContiguousArray(line.calls[line.head...].lazy.filter { !$0.isFinished })
            line.head = 0
            line.ended = 0
        }
    }

    private func line(for timeout: Duration) -> Line {
        if let lastLine, lastLine.timeout == timeout { return lastLine }
        let line = lines.first { $0.timeout == timeout } ?? makeLine(timeout)
        lastLine = line
        return line
    }

    private func makeLine(_ timeout: Duration) -> Line {
        let line = Line(timeout: timeout)
        line.timer = LoopTimer(loop: loop) { [unowned self, unowned line] in fire(line) }
        lines.append(line)
        return line
    }

    private func arm(_ line: Line, after delay: Duration) {
        line.isArmed = true
        line.timer?.schedule(after: delay)
    }

    /// Ends the calls whose deadline passed, then waits for the next one due.
    private func fire(_ line: Line) {
        line.isArmed = false
        line.isFiring = true
        let now = MonotonicInstant.now
        while line.head < line.calls.count {
            let call = line.calls[line.head]
            if call.isFinished {
                line.head += 1
                line.ended -= 1
                continue
            }
            guard line.due(call) <= now else { break }
            line.head += 1
            // The call is out of the line before it ends: its end is not an `ended` report.
            call.deadlinePassed()
        }
        line.isFiring = false
        dropEndedAtFront(of: line)
        if line.head < line.calls.count {
            arm(line, after: .nanoseconds(line.due(line.calls[line.head]).nanoseconds(since: now)))
        }
    }

    private func dropEndedAtFront(of line: Line) {
        while line.head < line.calls.count, line.calls[line.head].isFinished {
            line.head += 1
            line.ended -= 1
        }
        if line.head == line.calls.count {
            line.calls.removeAll(keepingCapacity: line.calls.count <= 1024)
            line.head = 0
        } else if line.head > 64 && line.head > line.calls.count / 2 {
            // Calls ended in order, but never all at once: the front of the array goes, in
            // one move of the live ones.
            line.calls.removeFirst(line.head)
            line.head = 0
        }
    }
}
