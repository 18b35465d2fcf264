import Foundation
import HTTPDNSCore

/// Sends HTTP requests with libcurl, optionally to pinned addresses, from one event-loop thread.
///
/// One `curl_multi` handle serves every request, so connections (and HTTP/2 sessions) are reused
/// across requests to the same host and pinned address list. Requests may be started from any
/// thread or task; cancelling the task cancels the transfer at once.
///
/// TLS verification of the URL's host is always on; pinning changes only where the connection
/// goes (see ``HTTPTransportRequest/pinnedAddresses``). Redirects are returned, never followed.
package final class HTTPTransport: Sendable {
    /// Settings shared by every request of one transport.
    package struct Configuration: Sendable {
        /// Most connections open to one host at a time (`CURLMOPT_MAX_HOST_CONNECTIONS`); further
        /// requests wait for a free connection. 0 means no limit. Default 8.
        package var maxConnectionsPerHost: Int = 8
        /// Idle connections kept for reuse (`CURLMOPT_MAXCONNECTS`). Default 64.
        package var maxCachedConnections: Int = 64
        /// Offer HTTP/2 over TLS (ALPN) and use it when the server agrees. Default true.
        package var enableHTTP2: Bool = true
        /// Honour `http_proxy`/`https_proxy` from the environment. Default false: a pinned request
        /// must reach the pinned address itself.
        package var useEnvironmentProxy: Bool = false
        /// The `User-Agent` sent when the request has none; nil sends none. Default `swift-httpdns`.
        package var userAgent: String? = "swift-httpdns"
        /// Largest total size of response header lines before failing with `responseTooLarge`.
        /// Default 256 KiB.
        package var maxResponseHeaderBytes: Int = 256 * 1024

        package init() {}
    }

    /// The settings this transport was made with.
    package let configuration: Configuration
    /// The loop new requests go to, and loops that ``renewConnections()`` replaced.
    private let loops: HTTPDNSLock<(current: CurlLoopOwner, retired: [CurlLoopOwner])>

    /// The loop (with its connection cache) that new requests go to.
    private var owner: CurlLoopOwner {
        loops.withLock { $0.current }
    }

    /// A process-wide transport, for callers that need no special configuration.
    package static let shared = HTTPTransport()

    /// Starts the event-loop thread. It stops when the transport is released and no transfer runs.
    package init(configuration: Configuration = .init()) {
        self.configuration = configuration
        loops = HTTPDNSLock((CurlLoopOwner(CurlEventLoop(configuration: configuration)), []))
    }

    /// Sends the requests started from now on over new connections, after the host moved to
    /// another network: a kept connection (an HTTP/2 session) may go through a gateway or from an
    /// address that is gone, and a request on it would wait for its timeout before libcurl gives
    /// it up. Requests in flight finish on their connections.
    ///
    /// libcurl cannot close the connections its `curl_multi` handle caches from outside the loop
    /// thread, so new requests go to a new loop (a new handle, no connection); the old one stops,
    /// closing its connections, once no transfer holds it, and is released at a later call or with
    /// the transport (releasing waits for its thread: call this off the cooperative pool).
    package func renewConnections() {
        let released = loops.withLock { loops -> [CurlLoopOwner] in
            var released: [CurlLoopOwner] = []
            var kept: [CurlLoopOwner] = []
            // Taken out of the array first: the array's own reference would make none unique.
            while var retired = loops.retired.popLast() {
                if isKnownUniquelyReferenced(&retired) { released.append(retired) } else { kept.append(retired) }
            }
            kept.append(loops.current)
            loops.retired = kept
            loops.current = CurlLoopOwner(CurlEventLoop(configuration: configuration))
            return released
        }
        // Released here, outside the lock: each one's deinit waits for its loop thread.
        _ = released
    }

    /// Starts a transfer whose events go to `delegate` (see ``HTTPTransportDelegate`` for the threads).
    ///
    /// - Throws: ``HTTPTransportError`` with `badURL` or `invalidRequest` when the request cannot be
    ///   sent; every later failure goes to ``HTTPTransportDelegate/didComplete(_:)``.
    @discardableResult
    package func start(_ request: HTTPTransportRequest, delegate: some HTTPTransportDelegate) throws(HTTPTransportError) -> HTTPTransportTask {
        let owner = owner
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, delegate: delegate, loop: owner.loop, owner: owner)
        owner.loop.submit(transfer)
        return HTTPTransportTask(transfer: transfer)
    }

    /// Sends a request and collects the whole response.
    ///
    /// - Throws: ``HTTPTransportError``; `cancelled` when the calling task is cancelled.
    package func send(_ request: HTTPTransportRequest) async throws(HTTPTransportError) -> HTTPTransportResponse {
        let collector = ResponseCollector()
        let owner = owner
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, delegate: collector, loop: owner.loop, owner: owner)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                collector.setDelivery { continuation.resume(returning: $0) }
                owner.loop.submit(transfer)
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    /// Sends a request and hands the whole response to `completion`, called once where the
    /// transport reports ends (its loop thread, or a pool thread for several ends of one turn: see
    /// ``HTTPTransportDelegate``), so it must be quick; for callers that continue the work right
    /// there instead of resuming a task. The transfer is tied to no task: cancel it with the returned handle.
    ///
    /// - Throws: ``HTTPTransportError`` with `badURL` or `invalidRequest` when the request cannot be
    ///   sent (then `completion` is never called).
    @discardableResult
    package func send(
        _ request: HTTPTransportRequest,
        completion: @escaping @Sendable (Result<HTTPTransportResponse, HTTPTransportError>) -> Void
    ) throws(HTTPTransportError) -> HTTPTransportTask {
        let collector = ResponseCollector()
        let owner = owner
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, delegate: collector, loop: owner.loop, owner: owner)
        collector.setDelivery(completion)
        owner.loop.submit(transfer)
        return HTTPTransportTask(transfer: transfer)
    }

    /// Sends a request and returns as soon as the response head arrives; the body follows as a
    /// stream of chunks in arrival order.
    ///
    /// Cancelling the task that iterates, or releasing the body stream, cancels the transfer
    /// (breaking out of a `for try await` loop is enough once the stream goes out of scope).
    /// Chunks not yet consumed wait in a ``HTTPTransportReceiveBuffer``: past its limit (4 MiB by
    /// default, or the request's own ``HTTPTransportRequest/receiveBuffer``) the transfer pauses
    /// until the reader catches up.
    ///
    /// - Throws: ``HTTPTransportError`` from this call for failures before the head; the body
    ///   stream throws ``HTTPTransportError`` for failures after it.
    package func stream(
        _ request: HTTPTransportRequest
    ) async throws(HTTPTransportError) -> (head: HTTPTransportResponseHead, body: AsyncThrowingStream<Data, any Error>) {
        var request = request
        let buffer = request.receiveBuffer ?? HTTPTransportReceiveBuffer()
        request.receiveBuffer = buffer
        let streamer = ResponseStreamer(body: buffer)
        let owner = owner
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, delegate: streamer, loop: owner.loop, owner: owner)
        let head = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                streamer.setHeadContinuation(continuation)
                owner.loop.submit(transfer)
            }
        } onCancel: {
            transfer.cancel()
        }
        return (try head.get(), buffer.makeStream { transfer.cancel() })
    }
}

/// One loop thread's life: it stops when the owner is released, that is when the transport has
/// moved on (released, or ``HTTPTransport/renewConnections()``) and no transfer on it runs.
final class CurlLoopOwner: Sendable {
    let loop: CurlEventLoop

    init(_ loop: CurlEventLoop) {
        self.loop = loop
    }

    deinit {
        loop.shutdown()
        // Short: shutdown cancels what runs; the wait ends when libcurl has freed its TLS state.
        loop.waitUntilStopped(timeout: .seconds(2))
    }
}
