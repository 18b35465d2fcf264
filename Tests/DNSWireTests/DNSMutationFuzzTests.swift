import DNSWire
import XCTest

/// A tiny deterministic PRNG (SplitMix64) so that a failing iteration can be replayed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Mutates valid answers at random (fixed seed) and decodes them: every result must be a message
/// or a `DNSWireError`, never a crash, a hang or another error; decoded messages must re-encode and
/// decode back to themselves.
final class DNSMutationFuzzTests: XCTestCase {
    func testRandomMutationsNeverCrash() throws {
        var random = SplitMix64(seed: 0x5EED_D45_1035)
        let seeds = try Fixture.allCases.map { try $0.bytes() }
        var decodedCount = 0
        var rejectedCount = 0
        for iteration in 0..<30_000 {
            var bytes = seeds[iteration % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let position = Int.random(in: 0..<max(bytes.count, 1), using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0 where !bytes.isEmpty:
                    bytes[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                case 1 where !bytes.isEmpty:
                    bytes[position] = UInt8.random(in: 0...255, using: &random)
                case 2:
                    bytes.insert(UInt8.random(in: 0...255, using: &random), at: min(position, bytes.count))
                case 3 where !bytes.isEmpty:
                    bytes.remove(at: position)
                default:
                    // Pointer-shaped bytes are the interesting ones for the name reader.
                    if position + 1 < bytes.count {
                        bytes[position] = 0xC0
                        bytes[position + 1] = UInt8.random(in: 0...UInt8(min(bytes.count, 255)), using: &random)
                    }
                }
            }
            do {
                let message = try DNSMessage(decoding: bytes)
                decodedCount += 1
                let again = try DNSMessage(decoding: try message.encode())
                XCTAssertEqual(again, message, "iteration \(iteration)")
            } catch let error as DNSWireError {
                rejectedCount += 1
                XCTAssertLessThanOrEqual(error.offset, bytes.count, "iteration \(iteration): \(error)")
            } catch {
                XCTFail("iteration \(iteration): unexpected error \(error)")
            }
        }
        // Both outcomes must really happen, or the mutations are not exercising the decoder.
        XCTAssertGreaterThan(decodedCount, 100)
        XCTAssertGreaterThan(rejectedCount, 100)
    }

    func testRandomGarbageNeverCrashes() {
        var random = SplitMix64(seed: 42)
        for iteration in 0..<20_000 {
            let count = Int.random(in: 0...600, using: &random)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            if bytes.count >= 12 {
                // Small counts so that parsing gets past the header now and then.
                for index in stride(from: 4, to: 12, by: 2) {
                    bytes[index] = 0
                    bytes[index + 1] = UInt8.random(in: 0...3, using: &random)
                }
            }
            do {
                _ = try DNSMessage(decoding: bytes)
            } catch is DNSWireError {
            } catch {
                XCTFail("iteration \(iteration): unexpected error \(error)")
            }
        }
    }
}
