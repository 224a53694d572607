import Foundation
import FuzzChecks
import Testing

/// The committed fuzz corpus (seeds, and every input that once crashed a target) replayed
/// through the fuzz targets' checks on every test run.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus")

    @Test("every corpus input passes its target's checks", arguments: [
        ("JSON", FuzzChecks.json), ("Configuration", FuzzChecks.configuration),
        ("StreamControl", FuzzChecks.streamControl), ("EventStream", FuzzChecks.eventStream),
        ("UpstreamResponse", FuzzChecks.upstreamResponse),
    ] as [(String, @Sendable (UnsafeBufferPointer<UInt8>) -> Void)])
    func replayCorpus(_ target: String, _ check: @Sendable (UnsafeBufferPointer<UInt8>) -> Void) throws {
        let count = try replay([Self.corpus.appendingPathComponent(target).path], through: check)
        #expect(count > 0, "no corpus for \(target)")
    }
}
