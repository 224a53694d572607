import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("Trigger")
struct TriggerTests {
    @Test("a signal fires on each activation for its id, and only for its id")
    func activation() {
        let trigger = Trigger()
        let reload = trigger.signal(activatedBy: "reload").map { "r" }.record()
        let more = trigger.signal(activatedBy: "more").map { "m" }.record()
        trigger.activate(for: "reload")
        trigger.activate(for: "more")
        trigger.activate(for: "reload")
        trigger.activate(for: "unknown")
        #expect(reload.values == ["r", "r"])
        #expect(more.values == ["m"])
        #expect(reload.completion == nil)
    }

    @Test("ids of any Hashable type are distinct by type and value")
    func hashableIDs() {
        struct TopicID: Hashable {
            var raw: String
        }
        let trigger = Trigger()
        let topic = trigger.signal(activatedBy: TopicID(raw: "1")).record()
        let number = trigger.signal(activatedBy: 1).record()
        trigger.activate(for: "1")
        trigger.activate(for: TopicID(raw: "1"))
        trigger.activate(for: 1)
        trigger.activate(for: 1)
        #expect(topic.values.count == 1)
        #expect(number.values.count == 2)
    }

    @Test("every signal made for an id fires")
    func severalSignals() {
        let trigger = Trigger()
        let first = trigger.signal(activatedBy: 7).record()
        let second = trigger.signal(activatedBy: 7).record()
        trigger.activate(for: 7)
        #expect(first.values.count == 1)
        #expect(second.values.count == 1)
    }

    @Test("activations are not stored: a later subscriber misses earlier ones")
    func notStored() {
        let trigger = Trigger()
        trigger.activate(for: "reload")
        let late = trigger.signal(activatedBy: "reload").record()
        #expect(late.values.isEmpty)
    }

    @Test("respects demand and stops after cancel")
    func demandAndCancel() {
        let trigger = Trigger()
        let recorder = trigger.signal(activatedBy: "x").record(initialDemand: .max(1))
        trigger.activate(for: "x")
        trigger.activate(for: "x")
        #expect(recorder.values.count == 1)
        recorder.request(.max(1))
        trigger.activate(for: "x")
        #expect(recorder.values.count == 2)
        recorder.cancel()
        trigger.activate(for: "x")
        #expect(recorder.values.count == 2)
        #expect(recorder.violations.isEmpty)
    }
}
