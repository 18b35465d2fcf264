import CH2O
import CQUIC
import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore

extension HTTPServer {
    /// One header field as received or to be sent.
    package struct Header: Sendable, Hashable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// One `name=value` pair of the query string, percent-decoded (`+` is a space).
    package struct QueryItem: Sendable, Hashable {
        package var name: String
        /// Nil for a bare `name` without `=`.
        package var value: String?

        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// A request as the handler sees it.
    package struct Request: Sendable {
        /// The method, for example `GET`.
        package var method: String
        /// The path, percent-decoded, without the query.
        package var path: String
        /// The query, parsed once from its bytes (``HTTPServerQuery``).
        package var query: HTTPServerQuery
        /// Header fields as received (HTTP/2 names are lower case).
        package var headers: [Header]
        /// The body; empty when a body sink took it.
        package var body: Data
        /// The client's address.
        package var remoteAddress: HTTPDNSIPAddress?
        /// The client's port.
        package var remotePort: Int
        /// `HTTP/1.0`, `HTTP/1.1` or `HTTP/2`.
        package var httpVersion: String
        /// Which of ``Configuration/listeners`` accepted the connection.
        package var listener: Int = 0
        /// One message of a ``MessageStream`` connection, presented as a POST (its
        /// ``httpVersion`` is empty).
        package var isMessage: Bool = false
        /// A message that came over DNS over QUIC (``Listener/isQUIC``); ``isMessage`` is true too.
        package var isQUIC: Bool = false

        package init(
            method: String, path: String, query: HTTPServerQuery = .init(), headers: [Header] = [], body: Data = Data(),
            remoteAddress: HTTPDNSIPAddress? = nil, remotePort: Int = 0, httpVersion: String = "HTTP/1.1"
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.remoteAddress = remoteAddress
            self.remotePort = remotePort
            self.httpVersion = httpVersion
        }

        /// The query string exactly as sent (after `?`), or nil when there was none.
        package var rawQuery: String? { query.rawText }

        /// Every query item, decoded (made on demand; the endpoints read ``query`` directly).
        package var queryItems: [QueryItem] { query.items }

        /// The first value of the header `name`, compared case-insensitively (ASCII).
        package func header(_ name: String) -> String? {
            headers.first { HTTPDNSASCII.equalsIgnoringCase($0.name, name) }?.value
        }

        /// The first value of the query parameter `name`.
        package func queryValue(_ name: String) -> String? {
            query.string(name)
        }
    }

    /// A response produced by the handler.
    package struct Response: Sendable {
        /// How the body is produced.
        package enum Body: Sendable {
            /// Bytes in memory.
            case data(Data)
            /// Chunks pulled until nil, on a thread of the response's own (the producer may block),
            /// each only once the previous one was sent; `length` nil sends chunked encoding
            /// (HTTP/1.1) or plain DATA frames (HTTP/2).
            case stream(length: Int?, producer: @Sendable () -> Data?)
        }

        /// The status code. Default 200.
        package var status: Int
        /// Header fields; the server adds `Content-Length` or chunking, `Date` and `Server`.
        package var headers: [Header]
        /// The body. Default empty.
        package var body: Body

        package init(status: Int = 200, headers: [Header] = [], body: Data = Data()) {
            self.status = status
            self.headers = headers
            self.body = .data(body)
        }

        package init(status: Int = 200, headers: [Header] = [], streamLength: Int?, producer: @escaping @Sendable () -> Data?) {
            self.status = status
            self.headers = headers
            self.body = .stream(length: streamLength, producer: producer)
        }

        /// A plain-text response.
        package static func text(_ text: String, status: Int = 200) -> Response {
            Response(
                status: status, headers: [Header(name: "Content-Type", value: "text/plain; charset=utf-8")],
                body: Data(text.utf8))
        }
    }

    /// Receives a request body instead of ``Request/body``, in pieces, one call at a time, before the
    /// handler runs. It is called on the server's loop thread: keep it cheap (hashing is fine).
    ///
    /// h2o 2.2 buffers the whole request body before the sink sees any of it (streaming request
    /// bodies came with h2o 2.3): a sink saves the handler a copy, it does not bound the server's memory.
    package protocol BodySink: AnyObject, Sendable {
        /// The next bytes of the body, in order.
        func append(_ bytes: UnsafeRawBufferPointer)
    }

    /// A listener's connections carry messages, each a two-byte big-endian length and that many
    /// bytes (DNS over TCP, RFC 1035 §4.2.2, RFC 7766; over TLS, RFC 7858), instead of HTTP.
    ///
    /// Each message reaches the responder as a POST of ``path`` with ``headers`` and the message as
    /// its body (``Request/isMessage``), so that one endpoint serves both. A `200` answer's body
    /// goes back framed the same way, as soon as it is made: pipelined messages may be answered out
    /// of order (RFC 7766 §6.2.1.1; DNS clients match answers by message ID). Any other status has
    /// no framing to travel in: the connection then closes once the messages taken before are
    /// answered. Bounded by ``Limits/maxMessagesInFlight`` and ``Limits/messageIdleTimeout``.
    package struct MessageStream: Sendable {
        /// The path each message is posted to.
        package var path: String
        /// The header fields each message carries, for example its `Content-Type`.
        package var headers: [Header]

        package init(path: String, headers: [Header] = []) {
            self.path = path
            self.headers = headers
        }

        /// The whole messages at the start of `bytes` and what is left of a message still arriving,
        /// split exactly as a connection splits what it has read (for tests and the fuzz target).
        package static func split(_ bytes: [UInt8]) -> (messages: [ArraySlice<UInt8>], rest: ArraySlice<UInt8>) {
            var messages: [ArraySlice<UInt8>] = []
            var offset = 0
            bytes.withUnsafeBytes { buffer in
                while true {
                    let length = httpdns_h2o_stream_frame(buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    guard length >= 0 else { break }
                    messages.append(bytes[(offset + 2)..<(offset + 2 + length)])
                    offset += 2 + length
                }
            }
            return (messages, bytes[offset...])
        }

        /// What a DNS-over-QUIC stream's framing (RFC 9250 §4.2) makes of the `bytes` it has
        /// received, `fin` once the client closed its side: exactly as the QUIC listener frames it
        /// (for tests and the fuzz target).
        package static func quicFrame(_ bytes: [UInt8], fin: Bool) -> QUICFrame {
            let length = bytes.withUnsafeBytes { httpdns_quic_stream_frame($0.baseAddress, $0.count, fin ? 1 : 0) }
            switch length {
            case 0...: return .query(Int(length))
            case -1: return .needMore
            default: return .protocolError
            }
        }

        /// A DoQ stream's verdict on what it has received (``quicFrame(_:fin:)``).
        package enum QUICFrame: Sendable, Hashable {
            /// A whole query of this many bytes after its two-byte length, and nothing past it.
            case query(Int)
            /// The query has not all arrived, and the client may send the rest.
            case needMore
            /// Bytes past the query, FIN before its end, a message shorter than a DNS header or a
            /// DNS message ID other than 0: the connection closes with DOQ_PROTOCOL_ERROR.
            case protocolError
        }
    }

    /// Why the server could not start.
    package struct StartError: Error, Sendable, CustomStringConvertible {
        /// What was wrong, naming the cause (`Address already in use`, a key not matching its certificate).
        package var detail: String

        package init(_ detail: String) { self.detail = detail }

        package var description: String { "HTTP server could not start: \(detail)" }
    }
}
