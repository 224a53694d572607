import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("Input")
struct InputTests {
    @Test("publishes the current value first, then every change")
    func currentThenChanges() {
        let query = Input("sw")
        let recorder = query.record()
        query.value = "swi"
        query.value = "swift"
        #expect(recorder.values == ["sw", "swi", "swift"])
        #expect(query.value == "swift")
    }

    @Test("copies are handles to the same input, settable through a constant")
    func copiesShareState() {
        let original = Input(1)
        let copy = original
        let recorder = original.record()
        copy.value = 2
        #expect(original.value == 2)
        #expect(recorder.values == [1, 2])
    }

    @Test("a subscriber without demand gets the latest value on its next request")
    func demand() {
        let page = Input(1)
        let recorder = page.record(initialDemand: .max(1))
        page.value = 2
        page.value = 3
        #expect(recorder.values == [1])
        recorder.request(.max(1))
        #expect(recorder.values == [1, 3])
        page.value = 4
        #expect(recorder.values == [1, 3])
        #expect(recorder.violations.isEmpty)
    }

    @Test("drives a pipeline with flatMapLatest")
    func pipeline() {
        let query = Input("")
        let recorder = query
            .flatMapLatest { text in Just(text.count) }
            .record()
        query.value = "abc"
        #expect(recorder.values == [0, 3])
    }
}
