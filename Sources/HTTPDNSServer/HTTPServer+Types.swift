import Foundation
import HTTPDNSCore

extension HTTPServer {
    /// One header field as received or to be sent.
    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// One `name=value` pair of the query string, percent-decoded (`+` is a space).
    public struct QueryItem: Sendable, Hashable {
        public var name: String
        /// Nil for a bare `name` without `=`.
        public var value: String?

        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// A request as the handler sees it.
    public struct Request: Sendable {
        /// The method, for example `GET`.
        public var method: String
        /// The path, percent-decoded by libmicrohttpd, without the query.
        public var path: String
        /// The query string exactly as sent (after `?`), or nil when there was none.
        public var rawQuery: String?
        /// The parsed query.
        public var queryItems: [QueryItem]
        /// Header fields as received.
        public var headers: [Header]
        /// The body; empty when a body sink took it.
        public var body: Data
        /// The client's address.
        public var remoteAddress: HTTPDNSIPAddress?
        /// The client's port.
        public var remotePort: Int
        /// `HTTP/1.1` or `HTTP/1.0`.
        public var httpVersion: String

        /// The first value of the header `name`, compared case-insensitively.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The first value of the query parameter `name`.
        public func queryValue(_ name: String) -> String? {
            queryItems.first { $0.name == name }?.value
        }
    }

    /// A response produced by the handler.
    public struct Response: Sendable {
        /// How the body is produced.
        public enum Body: Sendable {
            /// Bytes in memory.
            case data(Data)
            /// Chunks pulled on the connection's thread until nil; `length` nil sends chunked
            /// encoding. The producer may block (it runs on the connection's own thread).
            case stream(length: Int?, producer: @Sendable () -> Data?)
        }

        /// The status code. Default 200.
        public var status: Int
        /// Header fields; libmicrohttpd adds `Content-Length`/`Transfer-Encoding` and `Date`.
        public var headers: [Header]
        /// The body. Default empty.
        public var body: Body

        public init(status: Int = 200, headers: [Header] = [], body: Data = Data()) {
            self.status = status
            self.headers = headers
            self.body = .data(body)
        }

        public init(status: Int = 200, headers: [Header] = [], streamLength: Int?, producer: @escaping @Sendable () -> Data?) {
            self.status = status
            self.headers = headers
            self.body = .stream(length: streamLength, producer: producer)
        }

        /// A plain-text response.
        public static func text(_ text: String, status: Int = 200) -> Response {
            Response(
                status: status, headers: [Header(name: "Content-Type", value: "text/plain; charset=utf-8")],
                body: Data(text.utf8))
        }
    }

    /// Receives a request body piece by piece instead of in ``Request/body``, on the connection's
    /// thread, one call at a time; for bodies too large to hold (hashing a 64 MiB upload).
    public protocol BodySink: AnyObject, Sendable {
        /// The next bytes of the body, in order.
        func append(_ bytes: UnsafeRawBufferPointer)
    }

    /// Why the server could not start.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What was wrong.
        public var detail: String

        public init(_ detail: String) { self.detail = detail }

        public var description: String { "HTTP server could not start: \(detail)" }
    }
}

extension HTTPServer.QueryItem {
    /// Splits a raw query string into items, decoding `%XX` and `+`; undecodable parts are kept raw.
    static func parse(_ raw: String) -> [HTTPServer.QueryItem] {
        raw.split(separator: "&", omittingEmptySubsequences: true).map { part in
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            if let equals = part.firstIndex(of: "=") {
                return HTTPServer.QueryItem(
                    name: decode(part[..<equals]), value: decode(part[part.index(after: equals)...]))
            }
            return HTTPServer.QueryItem(name: decode(part), value: nil)
        }
    }
}
