import Aggregation
import HTTPServer
import OpenCombine
import TributaryConfiguration

/// The JSON answers of one resource on one worker: how a `GET /<name>` (not a stream) gets
/// its document. Loop-confined.
///
/// - **Coalescing** (`coalesce`, on by default): a request finds the run of the pipeline
///   already in flight for the same ``SharingKey`` (the same resource, parameter values and
///   identity: never another client's credentials) and joins it; only the first request
///   starts one. When the run
///   ends, every request in it gets the same document (each with its own headers: `ETag`,
///   gzip, 304, `HEAD`), and the run is forgotten: this is not a cache. A client that
///   disconnects leaves its run; the last one leaving cancels it, and with it every upstream
///   call in flight.
/// - **Stale if error** (`staleIfError`, off by default): each good document is kept in the
///   process's ``StaleSnapshots``; a run that fails answers the last good document of its key
///   instead, when it was fetched no longer ago than `staleIfError`, with `Age` and
///   `Tributary-Stale: <error code>`.
///
/// - **Projected fields** (`fields`): the requests of one run may keep different members of its
///   document (``FieldSelection``); each distinct selection is projected once per run, and its
///   requests get that projection, with its own `ETag`. The fields are not part of the run's key.
///
/// Runs are per worker, not per process: a run's pipeline, its upstream connections and its
/// waiting requests all belong to one event loop, so sharing them across workers would mean
/// handing requests between threads. With W workers, at most W runs of one URL are in flight.
///
/// ```swift
/// answers.answer(request, key: asked.key, keeping: asked.fields) { resource.results(for: query) }
/// ```
final class JSONAnswers {
    let resource: String
    let settings: Configuration.JSONAnswerSettings
    /// Whether its documents are per identity: answered `Cache-Control: private`.
    let privately: Bool
    private let staleSnapshots: StaleSnapshots
    /// The runs in flight that a request can join, by key (with `coalesce` only).
    private var runs: [SharingKey: Run] = [:]

    init(resource: String, settings: Configuration.JSONAnswerSettings, privately: Bool = false, staleSnapshots: StaleSnapshots) {
        self.resource = resource
        self.settings = settings
        self.privately = privately
        self.staleSnapshots = staleSnapshots
    }

    /// Answers `request` with the document of `key` (the resource, the parameter values that
    /// shape the document, a search's query among them, and whose it is), as `fields` show it.
    /// `fetch` makes the pipeline, and is called only when the request starts a run, not when
    /// it joins one.
    func answer<Fetch: Publisher<JSON, ResourceError>>(
        _ request: ServerRequest, key: SharingKey, keeping fields: FieldSelection = .everything, fetch: () -> Fetch
    ) {
        if settings.coalesce, let run = runs[key] { return join(request, fields, run) }
        let run = Run(key: key, answers: self)
        if settings.coalesce { runs[key] = run }
        join(request, fields, run)
        fetch().subscribe(run)
    }

    // MARK: - Runs

    /// One run of the pipeline and the requests waiting for its document. The run is the
    /// pipeline's subscriber itself: a `sink` cost a subscriber, its lock, two closure
    /// contexts and an `AnyCancellable` per request.
    private final class Run: Subscriber {
        typealias Input = JSON
        typealias Failure = ResourceError

        let key: SharingKey
        /// Who answers the waiting requests; held until the run ends.
        private var answers: JSONAnswers?
        /// The requests waiting, each with the fields it keeps.
        var waiting: [(request: ServerRequest, fields: FieldSelection)] = []
        /// The pipeline's subscription, until the run ends.
        private var subscription: (any Subscription)?
        /// Whether the run ended (answered, failed or left): it holds its answers until then.
        var isFinished: Bool { answers == nil }

        init(key: SharingKey, answers: JSONAnswers) {
            self.key = key
            self.answers = answers
        }

        func receive(subscription: any Subscription) {
            guard !isFinished, self.subscription == nil else { return subscription.cancel() }
            // Kept before the demand: the document may come at once, inside `request`.
            self.subscription = subscription
            subscription.request(.unlimited)
        }

        func receive(_ document: JSON) -> Subscribers.Demand {
            answers?.finish(self, with: .success(document))
            return .none
        }

        func receive(completion: Subscribers.Completion<ResourceError>) {
            guard case .failure(let error) = completion else { return }
            answers?.finish(self, with: .failure(error))
        }

        /// The run ended, or was left by its last client (`cancelling` the pipeline, and with
        /// it every upstream call in flight): it lets go of the pipeline and of its answers.
        func end(cancelling: Bool) {
            answers = nil
            if cancelling { subscription?.cancel() }
            subscription = nil
        }
    }

    private func join(_ request: ServerRequest, _ fields: FieldSelection, _ run: Run) {
        run.waiting.append((request, fields))
        request.onDisconnect = { [weak self, unowned request] in self?.leave(run, request) }
    }

    /// A client went away: it leaves the run; the last one cancels it.
    private func leave(_ run: Run, _ request: ServerRequest) {
        run.waiting.removeAll { $0.request === request }
        guard run.waiting.isEmpty, !run.isFinished else { return }
        forget(run)
        run.end(cancelling: true)
    }

    /// The run ended: every request in it gets its answer, and a later request starts anew.
    private func finish(_ run: Run, with result: Result<JSON, ResourceError>) {
        guard !run.isFinished else { return }
        forget(run)
        run.end(cancelling: false)
        let waiting = run.waiting
        run.waiting = []
        switch result {
        case .success(let document):
            let snapshot = Snapshot(document)
            if settings.staleIfError != nil { staleSnapshots.keep(snapshot, for: run.key) }
            var projections = Projections(whole: snapshot, document: document)
            for (request, fields) in waiting { request.respond(with: projections.snapshot(keeping: fields), privately: privately) }
        case .failure(let error):
            if let maximumAge = settings.staleIfError,
               let kept = staleSnapshots.latest(for: run.key, notOlderThan: maximumAge) {
                let age = ContinuousClock.now - kept.fetchedAt
                let headers = [("Age", String(age.components.seconds)), ("Tributary-Stale", error.code.rawValue)]
                var projections = Projections(whole: kept.snapshot, document: nil)
                for (request, fields) in waiting {
                    request.respond(with: projections.snapshot(keeping: fields), privately: privately, headers: headers)
                }
            } else {
                for (request, _) in waiting { request.respond(error) }
            }
        }
    }

    /// One run's document as each selection of fields among its requests shows it, each
    /// projected once.
    private struct Projections {
        let whole: Snapshot
        /// The document parsed, when the run has it (a stale one is parsed again if projected).
        let document: JSON?
        private var made: [FieldSelection: Snapshot] = [:]

        init(whole: Snapshot, document: JSON?) {
            self.whole = whole
            self.document = document
        }

        mutating func snapshot(keeping fields: FieldSelection) -> Snapshot {
            guard !fields.keepsEverything else { return whole }
            if let snapshot = made[fields] { return snapshot }
            let snapshot = document.map { Snapshot(fields.projecting($0)) } ?? fields.projecting(whole)
            made[fields] = snapshot
            return snapshot
        }
    }

    private func forget(_ run: Run) {
        if runs[run.key] === run { runs[run.key] = nil }
    }
}
