import Foundation

/// The result of a run: the machine, every row, and the rows that could not be measured; printed as
/// one Markdown table and written as JSON.
struct BenchReport: Sendable, Encodable {
    var machine: BenchSystem.Machine
    var quick: Bool
    var rows: [BenchRow] = []
    /// Rows that failed to run at all, with the reason (a server that did not start, …).
    var failures: [String: String] = [:]

    /// Every missed target and broken measurement, one line each, for stderr and the exit status.
    var missed: [String] {
        rows.filter { $0.passed == false }.map { row in
            "\(row.id) \(row.title): \(Self.format(row.subject.median, row.unit)) \(row.unit)"
                + (row.ratio.map { ", \(Self.format($0.median, "×"))× baseline" } ?? "")
                + " misses target \(row.target)" + (row.note.map { " (\($0))" } ?? "")
        } + failures.keys.sorted().map { "row \($0) not measured: \(failures[$0]!)" }
    }

    /// The Markdown table with the machine line above it.
    func table() -> String {
        var lines = [
            "Machine: \(machine.cores) cores, \(machine.cpuModel), kernel \(machine.kernel); \(machine.swiftVersion)",
            "Load average (1/5/15 min): \(machine.loadBefore) before, \(machine.loadAfter) after"
                + (quick ? "; QUICK run (few rounds)" : ""),
            "Figures: median [min – max] over rounds; ratio = subject ÷ baseline of the same round.",
            "",
            "| # | measured | median [min – max] | baseline (same run) | ratio | target | |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows {
            let baseline = row.baseline.map { "\(row.baselineTitle ?? ""): \(Self.range($0, row.unit))" } ?? "—"
            let ratio = row.ratio.map { Self.range($0, "×") } ?? "—"
            let verdict = row.passed.map { $0 ? "ok" : "MISSED" } ?? "ref"
            lines.append("| \(row.id) | \(row.title) | \(Self.range(row.subject, row.unit)) | \(baseline) | \(ratio) | \(row.target) | \(verdict) |")
        }
        let notes = rows.compactMap { row in row.note.map { "- \(row.id): \($0)" } }
        if !notes.isEmpty { lines += [""] + notes }
        for (row, reason) in failures.sorted(by: { $0.key < $1.key }) {
            lines.append("- row \(row) NOT MEASURED: \(reason)")
        }
        return lines.joined(separator: "\n")
    }

    /// Writes the report as pretty-printed JSON.
    func write(json path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    static func range(_ stats: BenchStats, _ unit: String) -> String {
        let suffix = unit == "×" ? "×" : " \(unit)"
        return "\(format(stats.median, unit))\(suffix) [\(format(stats.min, unit)) – \(format(stats.max, unit))]"
    }

    /// Three significant digits, more for large whole numbers; no exponent notation.
    static func format(_ value: Double, _ unit: String) -> String {
        let magnitude = abs(value)
        let decimals: Int
        switch magnitude {
        case 100...: decimals = 0
        case 10...: decimals = 1
        case 1...: decimals = 2
        default: decimals = 3
        }
        return String(format: "%.\(decimals)f", value)
    }
}
