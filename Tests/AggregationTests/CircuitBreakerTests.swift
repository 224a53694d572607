import Aggregation
import Synchronization
import Testing

@Suite("CircuitBreaker: its states, on a clock the test sets")
struct CircuitBreakerStateTests {
    let start = ContinuousClock.now

    /// The states a breaker announced, in order.
    final class Announced: Sendable {
        private let states = Mutex<[CircuitBreaker.State]>([])
        func append(_ state: CircuitBreaker.State) { states.withLock { $0.append(state) } }
        var all: [CircuitBreaker.State] { states.withLock { $0 } }
    }

    /// A breaker of its own (the gauge is per upstream name) and the transitions it announced.
    func breaker(_ name: String, failures: Int = 3, openFor: Duration = .seconds(10)) -> (CircuitBreaker, Announced) {
        let announced = Announced()
        let breaker = CircuitBreaker(upstream: name, settings: .init(failures: failures, openFor: openFor)) { transition in
            announced.append(transition.to)
        }
        return (breaker, announced)
    }

    func ticket(_ admission: CircuitBreaker.Admission) -> CircuitBreaker.Ticket? {
        if case .admitted(let ticket) = admission { return ticket }
        return nil
    }

    @Test("consecutive failures open it (a success in between starts the count again); open, calls are refused until the probe is due")
    func opens() throws {
        let (breaker, announced) = breaker("unit-opens")
        for outcome in [CircuitBreaker.Outcome.failure, .failure, .success, .failure, .failure] {
            breaker.record(outcome, of: try #require(ticket(breaker.admit(now: start))), now: start)
        }
        #expect(breaker.current == .closed)
        breaker.record(.failure, of: try #require(ticket(breaker.admit(now: start))), now: start)
        #expect(breaker.current == .open)
        #expect(breaker.admit(now: start + .seconds(4)) == .rejected(retryAfter: .seconds(6)))
        #expect(breaker.rejection(now: start + .seconds(4)) == .seconds(6))
        #expect(announced.all == [.open])
    }

    @Test("one probe once openFor passed, the others refused meanwhile; its success closes, its failure reopens for openFor")
    func probes() throws {
        let (breaker, announced) = breaker("unit-probes", failures: 1)
        breaker.record(.failure, of: try #require(ticket(breaker.admit(now: start))), now: start)
        let due = start + .seconds(10)
        let probe = try #require(ticket(breaker.admit(now: due)))
        #expect(breaker.current == .halfOpen)
        #expect(breaker.admit(now: due) == .rejected(retryAfter: .zero))
        breaker.record(.failure, of: probe, now: due)
        #expect(breaker.current == .open)
        #expect(breaker.admit(now: due + .seconds(1)) == .rejected(retryAfter: .seconds(9)))
        let second = try #require(ticket(breaker.admit(now: due + .seconds(10))))
        breaker.record(.success, of: second, now: due + .seconds(10))
        #expect(breaker.current == .closed)
        #expect(ticket(breaker.admit(now: due + .seconds(10))) != nil)
        #expect(announced.all == [.open, .open, .closed], "half-open is not announced")
    }

    @Test("a probe that tells nothing (cancelled, refused by the pool) hands the probe to the next call; late outcomes of older calls count for nothing")
    func neutralAndLate() throws {
        let (breaker, _) = breaker("unit-neutral", failures: 1)
        let early = try #require(ticket(breaker.admit(now: start)))
        let late = try #require(ticket(breaker.admit(now: start)))
        breaker.record(.failure, of: early, now: start)
        #expect(breaker.current == .open)
        breaker.record(.success, of: late, now: start)
        #expect(breaker.current == .open, "a call admitted before the circuit opened does not close it")
        let probe = try #require(ticket(breaker.admit(now: start + .seconds(10))))
        breaker.record(.neutral, of: probe, now: start + .seconds(10))
        #expect(breaker.current == .open)
        #expect(ticket(breaker.admit(now: start + .seconds(10))) != nil, "the next call is the probe, at once")
        #expect(breaker.current == .halfOpen)
    }

    @Test("failures: 0 never refuses")
    func off() throws {
        let (breaker, _) = breaker("unit-off", failures: 0)
        for _ in 0..<10 { breaker.record(.failure, of: try #require(ticket(breaker.admit(now: start))), now: start) }
        #expect(breaker.current == .closed)
        #expect(breaker.rejection(now: start) == nil)
    }
}
