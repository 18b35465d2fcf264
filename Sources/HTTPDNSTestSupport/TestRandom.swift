import Foundation

/// The random numbers of a randomized test: SplitMix64 from a seed that is printed, so that a
/// failure seen once can be run again with the same values.
///
/// Each run takes a fresh seed (more inputs covered over many runs) unless `HTTPDNS_TEST_SEED`
/// names one (decimal or `0x` hex), which repeats a run exactly. The seed is printed when the
/// generator is made, before anything can crash, and ``description`` puts it in failure messages.
package struct TestRandom: RandomNumberGenerator, CustomStringConvertible {
    package let seed: UInt64
    private var state: UInt64

    /// Seeds from `HTTPDNS_TEST_SEED`, else from the system's generator, and prints the seed.
    package init(_ test: String = #function) {
        var system = SystemRandomNumberGenerator()
        self.init(seed: Self.environmentSeed ?? system.next())
        print("\(test): \(self)")
    }

    /// A fixed seed (nothing printed).
    package init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// `random seed 0x… (HTTPDNS_TEST_SEED=0x… repeats it)`.
    package var description: String {
        let hex = "0x" + String(seed, radix: 16)
        return "random seed \(hex) (HTTPDNS_TEST_SEED=\(hex) repeats it)"
    }

    private static var environmentSeed: UInt64? {
        guard let text = ProcessInfo.processInfo.environment["HTTPDNS_TEST_SEED"] else { return nil }
        if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
        return UInt64(text)
    }
}
