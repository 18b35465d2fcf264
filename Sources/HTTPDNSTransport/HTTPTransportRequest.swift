import Foundation
import HTTPDNSCore

/// One HTTP request for ``HTTPTransport``.
///
/// `url` is always the real URL: its host is sent in `Host`, in TLS SNI and is the name the server
/// certificate must match. Where the connection goes is decided separately by ``pinnedAddresses``.
package struct HTTPTransportRequest: Sendable {
    /// How long each phase may take.
    package struct Timeouts: Sendable, Hashable {
        /// Time allowed to connect, including the TLS handshake. Default 10 s.
        package var connect: Duration = .seconds(10)
        /// Time allowed for the whole transfer, or nil for no limit. Default 60 s.
        package var total: Duration? = .seconds(60)
        /// The transfer fails when no byte moves for this long (libcurl's low-speed check, whole
        /// seconds, rounded up), or nil for no limit. Default 30 s.
        package var idle: Duration? = .seconds(30)

        package init(connect: Duration = .seconds(10), total: Duration? = .seconds(60), idle: Duration? = .seconds(30)) {
            self.connect = connect
            self.total = total
            self.idle = idle
        }
    }

    /// The real URL (`http` or `https`).
    package var url: URL
    /// The request method, an RFC 9110 token. Default `GET`.
    package var method: String = "GET"
    /// Header fields sent after libcurl's own (`Host`, and `Content-Length` for bodies).
    /// A field given here replaces libcurl's field of the same name.
    package var headers: [HTTPTransportHeader] = []
    /// The request body, or nil for none.
    package var body: HTTPTransportBody? = nil
    /// Connect only to these addresses, tried in order; empty lets libcurl resolve the URL host.
    ///
    /// The URL host is then never looked up. At most as many addresses as fit one synthetic host
    /// name are used (every IPv4 list of up to 27 addresses, IPv6 lists of up to 7).
    package var pinnedAddresses: [HTTPDNSIPAddress] = []
    /// Time limits. Defaults: connect 10 s, total 60 s, idle 30 s.
    package var timeouts: Timeouts = .init()
    /// Fail with ``HTTPTransportError/Code/responseTooLarge`` as soon as the body grows past this
    /// many bytes (checked against `Content-Length` first, then while receiving). Default nil: no limit.
    package var maxResponseBytes: Int? = nil
    /// Which certificate authorities verify the server. Verification itself is always on.
    package var trust: HTTPDNSTrust = .system
    /// Ask for every content coding libcurl can decode (`Accept-Encoding`) and deliver the body
    /// decoded, as `URLSession` does; the `Content-Encoding` header stays as received. Default false.
    package var decodesContent: Bool = false
    /// Send the request through this proxy (`CURLOPT_PROXY`, libcurl's `no_proxy` handling off: the
    /// caller already decided); nil leaves it to ``HTTPTransport/Configuration/useEnvironmentProxy``.
    package var proxy: String? = nil
    /// Called on the loop thread once the connection (and TLS) is ready, before the request is sent
    /// (`CURLOPT_PREREQFUNCTION`); returning false aborts the transfer with `cancelled` before a
    /// byte of the request leaves. Connection racing uses it to let only the first connection through.
    package var connectGate: (@Sendable (HTTPTransportConnection) -> Bool)? = nil
    /// Where the response body waits for a reader that may be slow: the transfer pauses while it
    /// is full (see ``HTTPTransportReceiveBuffer``). The delegate must append the body to it. Default
    /// nil: the body is delivered as fast as it arrives.
    package var receiveBuffer: HTTPTransportReceiveBuffer? = nil
    /// Open a new connection for this request and close it afterwards (`CURLOPT_FRESH_CONNECT`,
    /// `CURLOPT_FORBID_REUSE`): for probes that must see the server as a new client would (a kept
    /// connection, or an HTTP/2 session shared with other requests, says nothing about whether a
    /// new one can be made). Default false.
    package var freshConnection: Bool = false

    package init(
        url: URL,
        method: String = "GET",
        headers: [HTTPTransportHeader] = [],
        body: HTTPTransportBody? = nil,
        pinnedAddresses: [HTTPDNSIPAddress] = [],
        timeouts: Timeouts = .init(),
        maxResponseBytes: Int? = nil,
        trust: HTTPDNSTrust = .system
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.pinnedAddresses = pinnedAddresses
        self.timeouts = timeouts
        self.maxResponseBytes = maxResponseBytes
        self.trust = trust
    }
}

/// A source of request-body bytes that libcurl pulls from as it sends.
///
/// Methods are called on the transport's event-loop thread, one at a time: they must return
/// quickly (read from memory or a local file, never wait on the network).
package protocol HTTPTransportBodySource: Sendable {
    /// Copies up to `buffer.count` bytes into `buffer` and returns how many; 0 means the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Starts again from the first byte, so that libcurl can resend the body on a fresh connection
    /// when a reused one turned out to be closed. Return false when that is impossible.
    func rewind() -> Bool
}

extension HTTPTransportBodySource {
    package func rewind() -> Bool { false }
}

/// A request body: bytes in memory, or a streaming source read as libcurl asks.
package struct HTTPTransportBody: Sendable {
    enum Storage: Sendable {
        case data(Data)
        case source(any HTTPTransportBodySource)
    }

    let storage: Storage
    /// The body length, or nil for unknown (sent with chunked encoding over HTTP/1.1).
    package let length: Int64?

    /// A body held in memory.
    package static func data(_ data: Data) -> HTTPTransportBody {
        HTTPTransportBody(storage: .data(data), length: Int64(data.count))
    }

    /// A body read from `source` while sending; give `length` when known so that
    /// `Content-Length` is sent instead of chunked encoding.
    package static func stream(length: Int64?, source: some HTTPTransportBodySource) -> HTTPTransportBody {
        HTTPTransportBody(storage: .source(source), length: length)
    }
}
