import Foundation

/// Median, minimum and maximum of one figure over the rounds of a run.
///
/// The median is what targets are judged on: on a shared 2-core machine single rounds are hit by
/// other processes, and the median ignores a few bad rounds where a mean would not.
struct BenchStats: Sendable, Codable {
    var median: Double
    var min: Double
    var max: Double
    /// Every round's value, in the order measured.
    var samples: [Double]

    init(_ samples: [Double]) {
        precondition(!samples.isEmpty, "a figure needs at least one round")
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        self.median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        self.min = sorted[0]
        self.max = sorted[sorted.count - 1]
        self.samples = samples
    }

    /// Per-round ratios `subject[i] / baseline[i]`: a subject round is compared with the baseline
    /// round measured next to it, so slow phases of the machine hit both sides of one ratio.
    static func ratios(_ subject: [Double], over baseline: [Double]) -> BenchStats {
        BenchStats(zip(subject, baseline).map { $0 / Swift.max($1, .leastNonzeroMagnitude) })
    }
}

/// One line of the result table: a measured figure, optionally its same-run baseline, and the
/// target it is judged against.
struct BenchRow: Sendable, Codable {
    /// `1a`, `1b`, … : the row of the brief's table and a letter per variant.
    var id: String
    var title: String
    var unit: String
    var subject: BenchStats
    var baselineTitle: String? = nil
    var baseline: BenchStats? = nil
    /// subject / baseline per round (median of the per-round ratios).
    var ratio: BenchStats? = nil
    /// The target in words, for the table (`≤ 100 ns and ≤ 3× floor`); empty for reference rows.
    var target: String = ""
    /// nil for reference rows without a target.
    var passed: Bool? = nil
    /// Why it missed or anything else the reader must know.
    var note: String? = nil
}

/// Runs measurements in rounds, interleaving the variants so that each round of the subject has a
/// round of its baseline right next to it.
struct BenchRunner: Sendable {
    var options: BenchOptions

    /// Rounds for most rows: 11 (3 with `--quick`); odd so the median is a measured value.
    var rounds: Int { options.quick ? 3 : 11 }

    /// Runs every variant once per round, alternating the order (A B, B A, A B, …) so that neither
    /// side always runs first, after a warm-up round that is not recorded.
    ///
    /// - Parameters:
    ///   - rounds: how many recorded rounds.
    ///   - deadline: no new round starts after this; at least one round always runs.
    ///   - variants: each returns the figure of one round.
    /// - Returns: the figures per variant, in the order given.
    func interleave(
        rounds: Int, warmUp: Bool = true, deadline: ContinuousClock.Instant,
        _ variants: [() async throws -> Double]
    ) async throws -> [[Double]] {
        if warmUp {
            for variant in variants { _ = try await variant() }
        }
        var results = Array(repeating: [Double](), count: variants.count)
        for round in 0..<rounds {
            if round > 0, ContinuousClock.now > deadline { break }
            let order = round % 2 == 0 ? Array(variants.indices) : Array(variants.indices.reversed())
            for index in order {
                results[index].append(try await variants[index]())
            }
        }
        return results
    }

    /// What a variant collected itself in every call (CPU, say, or whole rounds), without the
    /// warm-up round's, which ``interleave(rounds:warmUp:deadline:_:)`` makes first and does not record.
    static func recorded<Figure>(_ figures: [Figure]) -> [Figure] {
        Array(figures.dropFirst())
    }

    /// A deadline `seconds` from now (quick runs get a quarter of it).
    func deadline(seconds: Double) -> ContinuousClock.Instant {
        ContinuousClock.now + .milliseconds(Int((options.quick ? seconds / 4 : seconds) * 1000))
    }
}

/// Wall time of `body` in nanoseconds.
func benchMeasureNanoseconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

/// Keeps a value alive so the optimiser cannot drop the work that produced it.
@inline(never)
func benchBlackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// A failure of the benchmark itself (a server that did not start, a lookup that failed): not a
/// missed target but a broken measurement.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
