import HTTPDNSCore
import HTTPDNSTestSupport

/// The helpers these tests used in HTTPDNSCoreTests, where they came from: a repeatable PRNG
/// (the same SplitMix64 as `TestRandom`), a string's bytes, and hex.
typealias SeededGenerator = TestRandom

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func unhex(_ text: String) -> [UInt8] {
    (try? HTTPDNSCrypto.hexDecode(text)) ?? []
}
