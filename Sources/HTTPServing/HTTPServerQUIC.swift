import CQUIC
import Foundation
import HTTPDNSCore

/// One DNS-over-QUIC listener (RFC 9250): CQUIC's server on the listener's UDP socket, on a thread
/// of its own, feeding the same responder as the message streams.
///
/// Each query reaches ``HTTPServerCore/message(_:_:listener:peer:quic:)`` as a message of the
/// listener's ``HTTPServer/MessageStream`` (so the DoH wire endpoint answers it, as for DoT); the
/// connection limits are the core's own (`accepted` and `closed` count QUIC connections with the TCP
/// ones). The C server's record is never freed (see `httpdns_quic_server_destroy`), so an answer
/// posted after the server stopped is dropped there.
final class HTTPServerQUIC: @unchecked Sendable {
    /// The listener's index in the configuration.
    let listener: Int
    /// The `httpdns_quic_server *`; its post and control functions are thread-safe. Set once, in
    /// `init` (after `self` is whole, since the callbacks' context is `self`), never changed.
    private var made: OpaquePointer? = nil
    private var pointer: OpaquePointer { made! }
    /// The core the callbacks go to; it outlives this server (it stops it before it goes).
    private unowned let core: HTTPServerCore
    private let destroyed = HTTPDNSLock(false)

    /// Makes the server on the bound UDP socket `fd` (taken over, closed on failure); nil on failure.
    init?(core: HTTPServerCore, listener: Int, fd: Int32, limits: HTTPServer.Limits, credentials: OpaquePointer) {
        self.core = core
        self.listener = listener
        var settings = httpdns_quic_settings()
        settings.idle_timeout_ms = HTTPServerCore.milliseconds(limits.messageIdleTimeout)
        settings.handshake_timeout_ms = HTTPServerCore.milliseconds(limits.handshakeTimeout)
        settings.drain_quiet_ms = HTTPServerCore.milliseconds(limits.drainQuietPeriod)
        settings.max_streams = max(1, limits.maxMessagesInFlight)
        var callbacks = httpdns_quic_callbacks()
        callbacks.accepted = quicAccepted
        callbacks.closed = quicClosed
        callbacks.message = quicMessage
        callbacks.shed = quicShed
        // Unretained: the core holds this object until it has destroyed the C server.
        callbacks.context = Unmanaged.passUnretained(self).toOpaque()
        made = httpdns_quic_server_create(fd, &settings, callbacks, credentials)
        guard made != nil else { return nil }
    }

    /// GnuTLS credentials from PEM text (one reference, the caller's).
    static func makeCredentials(certificate: String, key: String) throws(HTTPServer.StartError) -> OpaquePointer {
        var error = [CChar](repeating: 0, count: 256)
        guard let credentials = httpdns_quic_credentials_create(certificate, key, &error, error.count) else {
            let text = error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            throw HTTPServer.StartError(String(decoding: text, as: UTF8.self))
        }
        return credentials
    }

    /// Starts the server's thread; 0 or an errno.
    func start() -> Int32 {
        httpdns_quic_server_start(pointer)
    }

    /// New connections use `credentials` (a reference is taken).
    func setCredentials(_ credentials: OpaquePointer) {
        httpdns_quic_server_set_credentials(pointer, credentials)
    }

    func stopAccepting() {
        httpdns_quic_server_stop_accepting(pointer)
    }

    func closeConnections() {
        httpdns_quic_server_close_connections(pointer)
    }

    /// Ends the thread and frees the connections; once.
    func destroy() {
        guard destroyed.withLock({ value -> Bool in
            defer { value = true }
            return !value
        }) else { return }
        httpdns_quic_server_destroy(pointer)
    }

    /// Sends `response` as the answer to message `token`: a `200`'s body, else a close of the
    /// connection, `DOQ_PROTOCOL_ERROR` for a query that could not be read (4xx), else
    /// `DOQ_INTERNAL_ERROR`.
    func answer(_ token: UInt, _ response: HTTPServer.Response) {
        let message = OpaquePointer(bitPattern: token)
        if response.status == 200, case .data(let data) = response.body {
            data.withUnsafeBytes { bytes in
                let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
                httpdns_quic_server_post_answer(pointer, message, base, bytes.count, UInt64(HTTPDNS_DOQ_NO_ERROR))
            }
        } else {
            let code = (400..<500).contains(response.status) ? HTTPDNS_DOQ_PROTOCOL_ERROR : HTTPDNS_DOQ_INTERNAL_ERROR
            httpdns_quic_server_post_answer(pointer, message, nil, 0, UInt64(code))
        }
    }

    fileprivate func accepted(_ peer: UnsafePointer<sockaddr>?) -> Int32 {
        core.accept(listener: listener, peer: peer) == 0 ? 0 : 1
    }

    fileprivate func closed(_ peer: UnsafePointer<sockaddr>?) {
        core.closed(peer: peer)
    }

    fileprivate func message(_ message: OpaquePointer, _ bytes: UnsafeRawBufferPointer, peer: UnsafePointer<sockaddr>?) {
        core.message(message, bytes, listener: listener, peer: peer, quic: self)
    }

    fileprivate func shed(_ reason: Int32) {
        core.shed(reason: reason)
    }
}

// C function pointers cannot capture: the server comes back through the context pointer.

private func quicServer(_ context: UnsafeMutableRawPointer?) -> HTTPServerQUIC {
    Unmanaged<HTTPServerQUIC>.fromOpaque(context!).takeUnretainedValue()
}

private let quicAccepted: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<sockaddr>?, socklen_t) -> Int32 = {
    context, peer, _ in
    quicServer(context).accepted(peer)
}

private let quicClosed: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<sockaddr>?, socklen_t) -> Void = {
    context, peer, _ in
    quicServer(context).closed(peer)
}

private let quicMessage: @convention(c) (
    UnsafeMutableRawPointer?, OpaquePointer?, UnsafeRawPointer?, Int, UnsafePointer<sockaddr>?, socklen_t
) -> Void = { context, message, bytes, length, peer, _ in
    guard let message else { return }
    quicServer(context).message(message, UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : length), peer: peer)
}

private let quicShed: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Void = { context, reason in
    quicServer(context).shed(reason)
}
