#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Runs a handler when SIGINT or SIGTERM arrives, through `DispatchSource` signal sources, so that
/// the handler may do ordinary work (cancel a task, stop a server) instead of being limited to
/// async-signal-safe calls.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    /// Starts watching `signals`; their default action (ending the process) is switched off while
    /// watched.
    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "httpdns.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    /// Stops watching and restores the default actions.
    func stop() {
        for source in sources {
            source.cancel()
            signal(Int32(source.handle), SIG_DFL)
        }
    }
}
