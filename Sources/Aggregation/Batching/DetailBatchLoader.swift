import EventLoop
import HTTPCore

/// Waits for the details of ids it asked a ``DetailBatchLoader`` for: a snapshot of a
/// batched list resource.
protocol DetailWaiter: AnyObject {
    /// The details of the id asked with `tag` (its item in a batch answer), or why there are
    /// none: once for each id asked, unless withdrawn first. The tag is the waiter's own (a
    /// snapshot's first item of that id), so it finds its items without looking the id up.
    func received(tag: Int, _ result: Result<JSON, ResourceError>)
}

/// The batch calls of one call context of a batched list resource (``DetailBatch``): its
/// rendered batch path and its caller (whose forwarded headers go on every call, so the
/// context includes the ``Identity``). DataLoader for REST:
///
/// ```
/// snapshot A asks [a b c] ─┐   window    ┌─▶ GET /groups/metadata?ids=a,b,c,d ─┬─▶ A: a b c
/// snapshot B asks [c d]   ─┴─(batchWindow)┘   (at most `max` ids a call)        └─▶ B: c d
/// ```
///
/// Ids asked within the window wait together, then go out in calls of at most
/// ``DetailBatch/max`` ids, in the order they were first asked, at most `concurrency` calls in
/// flight (the rest go as calls end). An id asked again while it waits or is in flight joins
/// it: each id is fetched once. With a window of zero the loader belongs to one snapshot,
/// which asks all its ids at once: they go out at once, nothing shared.
///
/// Withdrawing (a snapshot cancelled, a client gone) takes a waiter's ids back: an id no one
/// waits for any more is not asked, and a call none of whose ids anyone waits for is
/// cancelled; a call that still serves someone goes on. Loop-confined (the worker's loop).
final class DetailBatchLoader {
    /// The resource of the first snapshot it served: every snapshot it serves calls alike
    /// (``BatchWindows`` checks).
    let resource: ListResource
    /// Where it is found while it has work: nil for a loader of one snapshot.
    let key: BatchWindows.Key?
    private weak var windows: BatchWindows?
    private let batch: DetailBatch
    private let callPath: BatchCallPath
    private let window: Duration
    /// How its calls revalidate: as the first live pipeline's that asked (every snapshot it
    /// serves has its identity and calls alike); nil while only one-shot answers asked.
    private var revalidation: Revalidation?
    /// By id, byte for byte (``ExactText``): ids an upstream tells apart are fetched apart.
    private var slots: [ExactText: Slot] = [:]
    /// Ids asked and not yet in a call, in the order first asked; from ``pendingHead`` on,
    /// those withdrawn meanwhile (no waiter left) included, skipped when calls are made.
    private var pending: [Slot] = []
    private var pendingHead = 0
    /// Ids in ``pending`` that someone still waits for.
    private var pendingCount = 0
    private var calls: [DetailBatchCall] = []
    /// Whether the ids pending go out as soon as there is room for a call: the window has
    /// closed (always, without one).
    private var isDue: Bool
    private var isSending = false
    private lazy var windowTimer = LoopTimer(loop: resource.upstream.client.loop) { [unowned self] in
        isDue = true
        sendPending()
    }

    /// One id's details, waited for.
    final class Slot {
        let id: String
        /// The trace of the snapshot that asked first: a call carries its first id's.
        let trace: TraceContext
        /// Who waits, each with its tag: the first inline, as most ids have one waiter (an
        /// array for each cost an allocation per id).
        private var first: (waiter: any DetailWaiter, tag: Int)?
        private var others: [(waiter: any DetailWaiter, tag: Int)] = []
        /// The call that asks for it, once there is one.
        var call: DetailBatchCall?
        /// Whether the loader still finds it by its id (a call's answer takes it out as it
        /// reads the id's details, its end or cancellation takes out the rest).
        var isFound = true
        /// Its details, once its call's answer was read.
        var details: JSON?

        init(id: String, trace: TraceContext) {
            self.id = id
            self.trace = trace
        }

        var isAwaited: Bool { first != nil }

        func add(_ waiter: any DetailWaiter, tag: Int) {
            if first == nil { first = (waiter, tag) } else { others.append((waiter, tag)) }
        }

        /// Takes `waiter` off (each of its tags); whether it waited.
        func remove(_ waiter: any DetailWaiter) -> Bool {
            let before = (first == nil ? 0 : 1) + others.count
            others.removeAll { $0.waiter === waiter }
            if let waiting = first, waiting.waiter === waiter { first = others.isEmpty ? nil : others.removeFirst() }
            return (first == nil ? 0 : 1) + others.count < before
        }

        /// Hands `result` to every waiter, once: the slot is left without any.
        func deliver(_ result: Result<JSON, ResourceError>) {
            guard let waiting = first else { return }
            let others = self.others
            first = nil
            self.others = []
            waiting.waiter.received(tag: waiting.tag, result)
            for other in others { other.waiter.received(tag: other.tag, result) }
        }
    }

    init(resource: ListResource, batch: DetailBatch, callPath: BatchCallPath, window: Duration, key: BatchWindows.Key?, windows: BatchWindows?) {
        self.resource = resource
        self.batch = batch
        self.callPath = callPath
        self.window = window
        self.key = key
        self.windows = windows
        isDue = window <= .zero
    }

    /// Whether `other` calls as this loader's resource does: the same definition and upstream.
    func serves(_ other: ListResource) -> Bool {
        other.upstream === resource.upstream && other.definition == resource.definition
    }

    /// `waiter` waits for the details of `ids` (distinct, each with the tag it is to be
    /// answered with), asked for `trace`. A result may come before this returns (a call
    /// refused at once, such as by an open circuit). A live pipeline's `revalidation` makes its
    /// calls from now on revalidate.
    func ask(_ ids: [(id: String, tag: Int)], for waiter: any DetailWaiter, trace: TraceContext, revalidation: Revalidation?) {
        if self.revalidation == nil { self.revalidation = revalidation }
        slots.reserveCapacity(slots.count + ids.count)
        for (id, tag) in ids {
            var isNew = false
            // One lookup: the slot found, or made in its place.
            let slot = Self.found(&slots[ExactText(id), default: {
                isNew = true
                return Slot(id: id, trace: trace)
            }()])
            if isNew {
                pending.append(slot)
                pendingCount += 1
            } else if !slot.isAwaited {
                slot.call?.waitedOn += 1
            }
            slot.add(waiter, tag: tag)
        }
        if isDue {
            sendPending()
        } else if pendingCount > 0, !windowTimer.isScheduled {
            windowTimer.schedule(after: window)
        }
    }

    /// `waiter` no longer waits for `ids`: ids no one waits for any more are not asked, and
    /// a call no one waits on any more is cancelled.
    func withdraw(_ ids: some Sequence<String>, of waiter: any DetailWaiter) {
        var freedRoom = false
        for id in ids {
            guard let slot = slots[ExactText(id)], slot.remove(waiter), !slot.isAwaited else { continue }
            if let call = slot.call {
                // Kept while in flight: asked again, it joins the call.
                call.waitedOn -= 1
                if call.waitedOn == 0 {
                    cancel(call)
                    freedRoom = true
                }
            } else {
                forget(slot)
                pendingCount -= 1
            }
        }
        if freedRoom, isDue { sendPending() }
        endIfIdle()
    }

    /// Makes calls of the pending ids while there is room (``DetailBatch/max`` ids each, at
    /// most `concurrency` calls in flight). A call may end inside its start (refused at
    /// once): that ending re-enters only to deliver, and this loop goes on.
    private func sendPending() {
        guard !isSending else { return }
        isSending = true
        defer { isSending = false }
        let room = max(1, resource.definition.concurrency)
        while pendingCount > 0, calls.count < room {
            var slots: [Slot] = []
            slots.reserveCapacity(min(batch.max, pendingCount))
            while slots.count < batch.max, pendingHead < pending.count {
                let slot = pending[pendingHead]
                pendingHead += 1
                // One withdrawn while it waited has no waiter (and another slot if asked again).
                if slot.isAwaited { slots.append(slot) }
            }
            pendingCount -= slots.count
            if pendingHead == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingHead = 0
            }
            if !slots.isEmpty { send(slots) }
        }
        if pendingCount == 0, window > .zero {
            isDue = false
            windowTimer.cancel()
        }
    }

    private func send(_ slots: [Slot]) {
        let call = DetailBatchCall(
            loader: self, slots: slots, path: callPath.path(for: slots.map(\.id)), trace: slots[0].trace, revalidation: revalidation)
        for slot in slots { slot.call = call }
        calls.append(call)
        resource.sharing?.batches?.increment()
        call.start()
    }

    private func cancel(_ call: DetailBatchCall) {
        calls.removeAll { $0 === call }
        release(call)
        call.cancel()
    }

    /// Forgets `call`'s ids: asked again, they are fetched again.
    private func release(_ call: DetailBatchCall) {
        for slot in call.slots {
            if slot.isFound { forget(slot) }
            slot.call = nil
        }
    }

    /// Takes `slot` out of ``slots``, with one lookup (another slot of its id, which cannot be
    /// while this one is found, would go back).
    private func forget(_ slot: Slot) {
        slot.isFound = false
        if let removed = slots.removeValue(forKey: ExactText(slot.id)), removed !== slot { slots[ExactText(slot.id)] = removed }
    }

    private static func found(_ slot: inout Slot) -> Slot { slot }

    /// Lets its windows forget it once nothing waits or is in flight.
    private func endIfIdle() {
        guard calls.isEmpty, pendingCount == 0 else { return }
        windowTimer.cancel()
        if key != nil { windows?.loaderIsIdle(self) }
    }

    // MARK: - Answers

    /// Reads the details of each id of `call` from a batch answer into its slot: its items
    /// at ``DetailBatch/itemsAt``, each under the id its ``DetailBatch/idMember`` holds (the
    /// first of an id, ids not asked ignored), in a text of its own without the list's id
    /// member (which the merge would drop: the list's members win), so that each merge is a
    /// splice of two texts. Fails when there is no array there.
    func readDetails(in document: JSON, of call: DetailBatchCall) -> Result<Void, ResourceError> {
        guard let items = batch.itemsAt.value(in: document)?.arrayValue else {
            let found = batch.itemsAt.value(in: document)?.kindDescription ?? "nothing"
            return .failure(resource.error(
                .upstreamMalformed, callPath.abbreviated,
                "upstream \(resource.upstream.name): GET \(callPath.abbreviated): expected an array at \(batch.itemsAt), found \(found)"))
        }
        for item in items {
            // Found and taken out in one lookup; a slot of another call goes back.
            guard let id = ListResource.id(of: item, member: batch.idMember).map(ExactText.init),
                  let slot = slots.removeValue(forKey: id) else { continue }
            guard slot.call === call else {
                slots[id] = slot
                continue
            }
            slot.isFound = false
            slot.details = Self.withoutMember(resource.definition.idMember, of: item)
        }
        return .success(())
    }

    /// `details` without its member `name`, in a text of its own; anything but an object as
    /// it is (its merge fails the item).
    private static func withoutMember(_ name: String, of details: JSON) -> JSON {
        if case .raw(let text) = details, let trimmed = text.textWithoutMember(named: name) { return .raw(trimmed) }
        guard let members = details.objectValue else { return details }
        return DetailCache.compact(.object(members.filter { $0.key != name }))
    }

    /// `call` ended: each of its ids gets its details, or the call's error, or (left out of
    /// the answer) an error of its own; a waiter that withdrew meanwhile gets nothing.
    func callEnded(_ call: DetailBatchCall, _ result: Result<Void, ResourceError>) {
        guard let position = calls.firstIndex(where: { $0 === call }) else { return }
        calls.remove(at: position)
        release(call)
        switch result {
        case .success:
            if let cache = resource.detailCache {
                for slot in call.slots {
                    guard let details = slot.details, details.isObject else { continue }
                    cache.keep(details, for: DetailCache.Key(identity: resource.identity, call: callPath.path(for: slot.id)), answer: call.answered)
                }
            }
            for slot in call.slots {
                slot.deliver(slot.details.map { .success($0) } ?? .failure(missing(slot.id)))
                slot.details = nil
            }
        case .failure(let error):
            let failure = Result<JSON, ResourceError>.failure(ResourceError(
                code: error.code, upstream: error.upstream, path: callPath.abbreviated,
                message: error.message.replacing(call.path, with: callPath.abbreviated), retryAfter: error.retryAfter))
            for slot in call.slots { slot.deliver(failure) }
        }
        if isDue { sendPending() }
        endIfIdle()
    }

    private func missing(_ id: String) -> ResourceError {
        resource.error(
            .upstreamItemMissing, callPath.abbreviated,
            "upstream \(resource.upstream.name): GET \(callPath.abbreviated) did not return item \(id)")
    }
}

/// One batch call: the details of its ids, read into their slots (its `read`), reported to
/// its loader.
final class DetailBatchCall: JSONFetch<Void> {
    /// Strong, as the loader holds its calls in flight: they let go of each other when it ends.
    private let loader: DetailBatchLoader
    let slots: [DetailBatchLoader.Slot]
    /// Its ids that someone waits for: at zero it is cancelled.
    var waitedOn: Int

    init(loader: DetailBatchLoader, slots: [DetailBatchLoader.Slot], path: String, trace: TraceContext, revalidation: Revalidation?) {
        self.loader = loader
        self.slots = slots
        waitedOn = slots.count
        // The answer's own object is parsed, its items kept as text: each is read.
        super.init(
            upstream: loader.resource.upstream, path: path, headers: loader.resource.callHeaders, trace: trace, call: "batch",
            keeping: .objectsInsideTheDocument, revalidation: revalidation,
            // The detail cache keeps each id's details as the batch answer's headers say.
            keepingAnswerHeaders: loader.resource.detailCache != nil)
    }

    override func read(_ document: JSON) -> Result<Void, ResourceError> {
        loader.readDetails(in: document, of: self)
    }

    override func deliver(_ result: consuming Result<Void, ResourceError>) {
        loader.callEnded(self, result)
    }
}
