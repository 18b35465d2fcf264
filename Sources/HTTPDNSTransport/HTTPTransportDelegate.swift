import Foundation

/// Receives the events of one transfer started with ``HTTPTransport/start(_:delegate:)``.
///
/// All methods are called in order and must return quickly (hand data over, never wait): the
/// response and data calls on the transport's event-loop thread; ``didComplete(_:)`` there too, or,
/// when several transfers end in one turn of the loop, on a thread of the global pool that reports
/// them together. ``didComplete(_:)`` is called exactly once and is the last call;
/// after ``HTTPTransportTask/cancel()`` returns no more response or data calls are made and
/// completion reports ``HTTPTransportError/Code/cancelled``.
package protocol HTTPTransportDelegate: Sendable {
    /// The final (non-1xx) status line and headers arrived.
    func didReceiveResponse(_ head: HTTPTransportResponseHead)
    /// A piece of the body arrived (at most libcurl's receive buffer, 16 KiB by default).
    func didReceiveData(_ data: Data)
    /// The transfer ended, successfully or not.
    func didComplete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>)
}

/// A running transfer; use it to cancel.
package final class HTTPTransportTask: Sendable {
    let transfer: CurlTransfer

    init(transfer: CurlTransfer) {
        self.transfer = transfer
    }

    /// Stops the transfer at once: the loop thread removes it from libcurl and reports
    /// ``HTTPTransportError/Code/cancelled``. Calling it again, or after completion, does nothing.
    package func cancel() {
        transfer.cancel()
    }

    /// Runs `work` after the loop's current turn, on the global pool together with the turn's
    /// other deferred work, when called from a delegate method on the loop thread; at once
    /// otherwise. For what a delegate hands on that need not hold the loop (waking a task): the
    /// loop goes back to libcurl first, and several turns' worth of wake-ups cost it one job.
    package func afterTurn(_ work: @escaping @Sendable () -> Void) {
        transfer.loop.afterTurn(work)
    }
}
