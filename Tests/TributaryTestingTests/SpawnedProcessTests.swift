import Testing
import TributaryTesting

@Suite("Spawned process output")
struct SpawnedProcessTests {
    /// The program writes 4,095 bytes and then a 3-byte character in one go, so the reader's
    /// first 4,096-byte read ends inside it; the character must still come out whole (it came
    /// out as replacement characters, and a test looking for "≥" in an error failed now and then).
    @Test("a character cut by a read boundary comes out whole")
    func characterAcrossReads() async throws {
        let process = try SpawnedProcess("/bin/sh", ["-c", #"printf '%s≥ end' "$(head -c 4095 /dev/zero | tr '\0' a)""#])
        #expect(await process.exitStatus() == 0)
        let output = process.output.value
        #expect(output.hasPrefix(String(repeating: "a", count: 4095) + "≥ end"), "\(output.suffix(40))")
        #expect(!output.contains("\u{FFFD}"))
    }
}
