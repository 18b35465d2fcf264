/// A one-line transfer meter on stderr, like curl's, for long transfers only.
///
/// It appears only when stderr is a terminal (never in logs or pipes), after the transfer has run
/// for ``delay`` seconds (short fetches stay quiet), redraws at most ten times a second, and erases
/// itself at the end so that the terminal holds only what the command printed.
struct ProgressBar: Sendable {
    private let total: Int64?
    private let enabled: Bool
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant?
    private var received: Int64 = 0
    private var drawn = false

    /// Seconds before the bar first appears.
    static let delay: Duration = .milliseconds(500)
    static let interval: Duration = .milliseconds(100)

    /// - Parameters:
    ///   - total: the expected body length (`Content-Length`), if known.
    ///   - enabled: false for `-s`, `-v`, or a body going to the same terminal.
    init(total: Int64?, enabled: Bool) {
        self.total = total
        self.enabled = enabled && Output.stderrIsTerminal
        self.start = clock.now
    }

    /// Records `count` more bytes and redraws when due.
    mutating func advance(by count: Int) {
        received += Int64(count)
        guard enabled else { return }
        let now = clock.now
        guard start.duration(to: now) >= ProgressBar.delay else { return }
        if let lastDraw, lastDraw.duration(to: now) < ProgressBar.interval { return }
        lastDraw = now
        draw(elapsed: start.duration(to: now))
    }

    /// Erases the bar, if it was shown.
    mutating func finish() {
        guard drawn else { return }
        Output.stderrRaw("\r\u{1B}[K")
        drawn = false
    }

    private mutating func draw(elapsed: Duration) {
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let rate = ProgressBar.size(Int64(Double(received) / seconds)) + "/s"
        var line: String
        if let total, total > 0 {
            let fraction = min(1, Double(received) / Double(total))
            let width = 30
            let filled = Int(fraction * Double(width))
            line = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
            line += "\(Int(fraction * 100))%  \(ProgressBar.size(received)) / \(ProgressBar.size(total))"
        } else {
            line = ProgressBar.size(received)
        }
        Output.stderrRaw("\r\u{1B}[K" + line + "  " + rate)
        drawn = true
    }

    /// `512 B`, `1.5 KiB`, `12.0 MiB`, `3.2 GiB`.
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
