public import EventLoop
public import OpenCombine
import Rivers
import Synchronization

/// A live resource whose pipeline runs on a worker's loop, seen from this worker's: another
/// worker's, or its own (a state then reaches this worker's streams in a later turn of its
/// loop, as it reaches every other worker's: TributaryServer's `WorkerPipelines` says why).
///
/// ```
/// owner loop:  LiveResource.states (shareLatest) ──┬─▶ owner's own streams
///                                                  └─▶ bridge ──execute──▶ this loop: shareLatest ─▶ this worker's streams
/// ```
///
/// This worker's subscribers share one bridge (a local `shareLatest`); the bridge is one
/// subscriber of the owner's pipeline, subscribed while this worker has subscribers. States
/// cross threads by value (``LiveState`` is `Sendable`); everything else stays on its loop.
public final class RemoteLiveResource: LiveSource {
    public let name: String
    private let owner: Owner
    public let states: AnyPublisher<LiveState, Never>

    /// The pipeline on another loop: `source` gives it, called on `ownerLoop` only (it may
    /// make the pipeline the first time); `loop` is this worker's.
    public init(name: String, ownerLoop: EventLoop, source: @escaping @Sendable () -> any LiveSource, loop: EventLoop) {
        self.name = name
        owner = Owner(loop: ownerLoop, source: source)
        states = CrossLoopStates(owner: owner, loop: loop).shareLatest().eraseToAnyPublisher()
    }

    /// `owner` is the pipeline, bound to its loop; `loop` is this worker's.
    public convenience init(owner: LoopBound<any LiveSource>, name: String, loop: EventLoop) {
        self.init(name: name, ownerLoop: owner.loop, source: { owner.value }, loop: loop)
    }

    public func reload() {
        let owner = self.owner
        owner.loop.execute { owner.source().reload() }
    }
}

/// The pipeline a ``RemoteLiveResource`` follows: its loop, and how to reach it there.
private struct Owner: Sendable {
    let loop: EventLoop
    let source: @Sendable () -> any LiveSource
}

/// The owner's states, delivered on another loop. Its subscription lives on two loops: the
/// downstream side on `loop`, the upstream side (a sink on the owner's states) on the owner's.
private struct CrossLoopStates: Publisher {
    typealias Output = LiveState
    typealias Failure = Never

    let owner: Owner
    let loop: EventLoop

    func receive<Downstream: Subscriber>(subscriber: Downstream) where Downstream.Input == LiveState, Downstream.Failure == Never {
        subscriber.receive(subscription: Bridge(owner: owner, loop: loop, downstream: AnySubscriber(subscriber)))
    }

    /// Starts on the first demand; the owner-side sink forwards each state to `loop`.
    private final class Bridge: Subscription, @unchecked Sendable {
        private let owner: Owner
        private let loop: EventLoop
        /// Touched on `loop` only.
        private var downstream: AnySubscriber<LiveState, Never>?
        private var started = false
        /// Shared by both loops: set by cancel, read before subscribing and delivering.
        private let cancelled = Mutex(false)
        /// The owner-side subscription, made and cancelled on the owner's loop.
        private let upstream = Mutex<LoopBound<AnyCancellable>?>(nil)

        init(owner: Owner, loop: EventLoop, downstream: AnySubscriber<LiveState, Never>) {
            self.owner = owner
            self.loop = loop
            self.downstream = downstream
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0, !started else { return }
            started = true
            let owner = self.owner
            owner.loop.execute { [self] in
                guard !cancelled.withLock({ $0 }) else { return }
                let sink = owner.source().states.sink { [self] state in
                    loop.execute { [self] in deliver(state) }
                }
                upstream.withLock { $0 = LoopBound(sink, loop: owner.loop) }
            }
        }

        func cancel() {
            downstream = nil
            cancelled.withLock { $0 = true }
            let owner = self.owner
            owner.loop.execute { [self] in
                upstream.withLock { bound in
                    bound?.value.cancel()
                    bound?.release()
                    bound = nil
                }
            }
        }

        private func deliver(_ state: LiveState) {
            guard !cancelled.withLock({ $0 }), let downstream else { return }
            _ = downstream.receive(state)
        }
    }
}
