import OpenCombine

/// The drain loop every Rivers subscription whose events come from more than one place is
/// built on (several sources, or a source and a downstream on other threads): whichever threads
/// call it, downstream receives one call at a time, never more values than it requested, and the
/// completion after the value in flight, never beside or ahead of it.
///
/// This is the queue-drain pattern that RxJava and Reactor centralise. A thread changes the
/// operator's state under `lock`, then calls ``drain()``. If no thread is in the loop, it
/// becomes the loop: it calls ``emitNext()`` until that has nothing left to do, and sends the
/// pending completion once it may. If a thread is already in the loop, the newcomer leaves its
/// work there and returns at once; so a source that calls back synchronously (a `Just`, a
/// page that loads at once) is served by the loop around it instead of by recursion.
///
///     any thread                          the one thread in the loop
///     lock; buffer.append(v); drain() ──▶ while emitNext() {}     unlock · downstream.receive(v) · lock
///                                         completing, isDrained?  cancel sources · send completion
///
/// A subclass:
/// - changes its state with `lock` held and ends each entry point with `drain()` (which
///   releases the lock) or `lock.unlock()`;
/// - does one step per ``emitNext()`` call (deliver one value with ``deliver(_:)``, ask one
///   source for more, subscribe one page), releasing the lock around each call out;
/// - ends the output with ``complete(with:)``: a failure goes out at once, dropping what is
///   buffered; `.finished` once ``isDrained``;
/// - hands over its sources in ``takeSources()``; they are cancelled outside the lock when the
///   output completes or is cancelled, exactly once.
///
/// Nothing goes downstream before ``start()``, which the publisher calls right after handing the
/// subscription to its subscriber: a source that completes on another thread meanwhile waits.
///
///     let inner = Inner(downstream: subscriber)
///     subscriber.receive(subscription: inner)
///     inner.start()
///     upstream.subscribe(inner)
internal class SerialEmitter<Downstream: Subscriber>: Subscription, CustomStringConvertible {
    /// Guards the emitter's state and its subclass's. Never held across a call out.
    final let lock = Lock.make()
    final let downstream: Downstream
    /// What downstream requested and has not received yet.
    final var demand = Subscribers.Demand.none
    /// Completed or cancelled: nothing more goes downstream, no source is asked for anything.
    final private(set) var isTerminal = false
    /// A completion waits to be sent: later events of the sources are moot.
    final private(set) var isCompleting = false
    /// The pending completion is a failure (sent without waiting for buffered values).
    /// Kept apart from `pendingCompletion` so that the loop never touches the generic optional.
    private var isFailing = false
    private var pendingCompletion: Subscribers.Completion<Downstream.Failure>?
    /// A thread is in the loop, or `start()` has not been called yet.
    private var isDraining = true

    let description: String

    init(downstream: Downstream, description: String) {
        self.downstream = downstream
        self.description = description
    }

    // MARK: What a subclass provides (each called with `lock` held)

    /// Does one step of delivery and returns whether it did anything; `false` ends the loop
    /// until the next `drain()`. It may release the lock around a call out, and returns with
    /// the lock held.
    func emitNext() -> Bool {
        false
    }

    /// Whether nothing buffered must be delivered before a `.finished` completion.
    var isDrained: Bool {
        true
    }

    /// Forgets and returns every source still subscribed, to be cancelled outside the lock.
    func takeSources() -> [any Cancellable] {
        []
    }

    // MARK: What a subclass calls

    /// Neither completing nor terminated: a new source is still worth subscribing. Takes the lock.
    final var acceptsSources: Bool {
        lock.withLock { !isTerminal && !isCompleting }
    }

    /// Lets the loop run: what was decided before the subscription reached downstream goes out now.
    final func start() {
        lock.lock()
        isDraining = false
        drain()
    }

    /// Records how the output ends; the first completion wins. Does not drain.
    ///
    /// - Precondition: `lock` is held.
    final func complete(with completion: Subscribers.Completion<Downstream.Failure>) {
        guard !isCompleting else { return }
        if case .failure = completion {
            isFailing = true
        }
        pendingCompletion = completion
        isCompleting = true
    }

    /// Sends one value downstream and adds the demand that comes back.
    ///
    /// - Precondition: `lock` is held, the caller is the loop and `demand > 0`.
    /// - Postcondition: `lock` is held.
    @inline(__always)
    final func deliver(_ value: Downstream.Input) {
        demand -= 1
        lock.unlock()
        let additionalDemand = downstream.receive(value)
        lock.lock()
        demand += additionalDemand
    }

    /// Delivers `value` at once if no thread is in the loop and downstream has demand, as the
    /// loop would have, and returns `true`; otherwise returns `false` for the caller to buffer
    /// it. The caller has checked that nothing buffered must go first.
    ///
    /// - Precondition: `lock` is held.
    /// - Postcondition: `lock` is held.
    final func deliverIfIdle(_ value: Downstream.Input) -> Bool {
        guard !isDraining, !isTerminal, demand > 0 else { return false }
        isDraining = true
        deliver(value)
        isDraining = false
        return true
    }

    /// Runs the loop unless a thread is already in it.
    ///
    /// - Precondition: `lock` is held.
    /// - Postcondition: `lock` is released.
    final func drain() {
        if isDraining {
            lock.unlock()
            return
        }
        isDraining = true
        while !isTerminal {
            if isCompleting, isFailing || isDrained {
                sendCompletion()
                return
            }
            guard emitNext() else { break }
        }
        isDraining = false
        lock.unlock()
    }

    // MARK: Subscription

    final func request(_ demand: Subscribers.Demand) {
        lock.lock()
        guard !isTerminal else {
            lock.unlock()
            return
        }
        self.demand += demand
        drain()
    }

    final func cancel() {
        lock.lock()
        guard !isTerminal else {
            lock.unlock()
            return
        }
        isTerminal = true
        let sources = takeSources()
        lock.unlock()
        for source in sources {
            source.cancel()
        }
    }

    // MARK: Private

    /// Terminates: cancels the sources, then sends the pending completion. Kept out of
    /// `drain()` so that its loop never touches the generic completion.
    ///
    /// - Precondition: `lock` is held, the caller is the loop and a completion is pending.
    /// - Postcondition: `lock` is released.
    @inline(never)
    private func sendCompletion() {
        isTerminal = true
        let completion = pendingCompletion.take()!
        let sources = takeSources()
        lock.unlock()
        for source in sources {
            source.cancel()
        }
        downstream.receive(completion: completion)
    }
}
