import Foundation
import HTTPDNSCore

/// Changes a JSON zone every second while a test runs, on a thread of its own: the file is
/// replaced whole (written aside and renamed over it, so that an instance starting or reloading
/// reads one zone or the next, never part of one) and the fleet is sent SIGHUP.
final class ZoneChanger: Sendable {
    let file: URL
    /// The zone's version (its address), whether the thread should go on, and whether it runs.
    private let state = HTTPDNSLock((version: 0, going: false, running: false))
    private let finished = DispatchSemaphore(value: 0)

    /// Writes the first zone.
    init(file: URL) throws {
        self.file = file
        try Self.zone(version: 0).write(to: file, options: .atomic)
    }

    /// `www.example.test`'s address in the zone written last.
    var address: String { Self.address(state.withLock { $0.version }) }

    /// How many times the zone has changed.
    var reloads: Int { state.withLock { $0.version } }

    /// Starts changing the zone every second, signalling `fleet` after each change.
    func start(signalling fleet: Fleet) {
        let started = state.withLock { state in
            defer { state.going = true; state.running = true }
            return !state.running
        }
        guard started else { return }
        Thread { [self] in
            while state.withLock({ $0.going }) {
                for _ in 0..<20 where state.withLock({ $0.going }) { usleep(50_000) }
                guard state.withLock({ $0.going }) else { break }
                let version = state.withLock { $0.version } + 1
                guard (try? Self.zone(version: version).write(to: file, options: .atomic)) != nil else { continue }
                state.withLock { $0.version = version }
                fleet.signal(SIGHUP)
            }
            finished.signal()
        }.start()
    }

    /// Stops the changes and waits for the thread. Safe to call twice.
    func stop() {
        let wasRunning = state.withLock { state in
            defer { state.going = false; state.running = false }
            return state.running
        }
        if wasRunning { finished.wait() }
    }

    private static func address(_ version: Int) -> String { "192.0.2.\(version % 250 + 1)" }

    private static func zone(version: Int) -> Data {
        Data(#"{"www.example.test": {"A": ["\#(address(version))"], "ttl": 60}}"#.utf8)
    }
}
