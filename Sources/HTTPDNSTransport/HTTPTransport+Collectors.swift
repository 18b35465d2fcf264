import Foundation
import HTTPDNSCore

/// Collects a whole response for ``HTTPTransport/send(_:)`` and ``HTTPTransport/send(_:completion:)``.
///
/// Events come from the loop thread (the end maybe from the pool, see ``HTTPTransportDelegate``);
/// the delivery is set by the caller before the transfer is submitted, so the mutex only orders
/// those two hand-overs.
final class ResponseCollector: HTTPTransportDelegate {
    typealias Delivery = @Sendable (Result<HTTPTransportResponse, HTTPTransportError>) -> Void

    private struct State {
        var deliver: Delivery?
        var head: HTTPTransportResponseHead?
        var body = Data()
    }

    private let state = HTTPDNSLock(State())

    /// Where the result goes (called once, where the end is reported).
    func setDelivery(_ deliver: @escaping Delivery) {
        state.withLock { $0.deliver = deliver }
    }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) {
        state.withLock { $0.head = head }
    }

    func didReceiveData(_ data: Data) {
        state.withLock { $0.body.append(data) }
    }

    func didComplete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        let (deliver, outcome) = state.withLock { state in
            defer { state.deliver = nil; state.body = Data() }
            let outcome = result.map { metrics in
                HTTPTransportResponse(
                    head: state.head ?? HTTPTransportResponseHead(statusCode: 0, headers: [], connectedAddress: nil, httpVersion: ""),
                    body: state.body, metrics: metrics)
            }
            return (state.deliver, outcome)
        }
        deliver?(outcome)
    }
}

/// Hands the head to ``HTTPTransport/stream(_:)`` and the body chunks to its receive buffer.
final class ResponseStreamer: HTTPTransportDelegate {
    private struct State {
        var headContinuation: CheckedContinuation<Result<HTTPTransportResponseHead, HTTPTransportError>, Never>?
        /// A result that arrived before the caller installed its continuation.
        var earlyHead: Result<HTTPTransportResponseHead, HTTPTransportError>?
    }

    private let state = HTTPDNSLock(State())
    private let body: HTTPTransportReceiveBuffer

    init(body: HTTPTransportReceiveBuffer) {
        self.body = body
    }

    func setHeadContinuation(_ continuation: CheckedContinuation<Result<HTTPTransportResponseHead, HTTPTransportError>, Never>) {
        let early = state.withLock { state -> Result<HTTPTransportResponseHead, HTTPTransportError>? in
            if let early = state.earlyHead { return early }
            state.headContinuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    private func resolveHead(_ result: Result<HTTPTransportResponseHead, HTTPTransportError>) {
        let continuation = state.withLock { state in
            defer { state.headContinuation = nil }
            if state.headContinuation == nil, state.earlyHead == nil { state.earlyHead = result }
            return state.headContinuation
        }
        continuation?.resume(returning: result)
    }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) {
        resolveHead(.success(head))
    }

    func didReceiveData(_ data: Data) {
        body.append(data)
    }

    func didComplete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        switch result {
        case .success:
            body.finish()
        case .failure(let error):
            resolveHead(.failure(error))
            body.finish(throwing: error)
        }
    }
}
