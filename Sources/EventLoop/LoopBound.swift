/// A loop-confined value that may be passed between threads but only used on its loop
/// (checked at run time), like NIO's `NIOLoopBound`.
public struct LoopBound<Value>: @unchecked Sendable {
    private let box: Box
    public let loop: EventLoop

    private final class Box {
        var value: Value?
        init(_ value: Value) { self.value = value }
    }

    public init(_ value: Value, loop: EventLoop) {
        precondition(loop.isCurrent, "LoopBound made off its loop")
        box = Box(value)
        self.loop = loop
    }

    /// The value; only on the loop, and only until ``release()``.
    public var value: Value {
        precondition(loop.isCurrent, "LoopBound used off its loop")
        guard let value = box.value else { preconditionFailure("LoopBound used after release") }
        return value
    }

    /// Drops the value (on the loop), e.g. to free a server before its loop stops.
    public func release() {
        precondition(loop.isCurrent, "LoopBound released off its loop")
        box.value = nil
    }
}
