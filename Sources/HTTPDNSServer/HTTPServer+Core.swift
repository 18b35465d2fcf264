import CMicroHTTPD
import Foundation
import HTTPDNSCore
import Synchronization

/// What libmicrohttpd's callbacks reach through their context pointer.
///
/// Immutable after init except the atomic counters; the C strings are owned here and outlive the
/// daemon (the server stops the daemon before releasing its reference).
final class HTTPServerCore: @unchecked Sendable {
    let maxRequestBodyBytes: Int
    let bodySink: @Sendable (HTTPServer.Request) -> (any HTTPServer.BodySink)?
    let handler: @Sendable (HTTPServer.Request, (any HTTPServer.BodySink)?) -> HTTPServer.Response
    let certificate: UnsafeMutablePointer<CChar>?
    let key: UnsafeMutablePointer<CChar>?
    let connections = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let openConnections = Atomic<Int>(0)

    init(
        configuration: HTTPServer.Configuration,
        bodySink: @escaping @Sendable (HTTPServer.Request) -> (any HTTPServer.BodySink)?,
        handler: @escaping @Sendable (HTTPServer.Request, (any HTTPServer.BodySink)?) -> HTTPServer.Response
    ) {
        self.maxRequestBodyBytes = configuration.maxRequestBodyBytes
        self.bodySink = bodySink
        self.handler = handler
        self.certificate = configuration.tlsCertificatePEM.map { strdup($0) }
        self.key = configuration.tlsKeyPEM.map { strdup($0) }
    }

    deinit {
        free(certificate)
        if let key {
            // Do not leave the private key in freed memory.
            memset(key, 0, strlen(key))
            free(key)
        }
    }

    /// One call of the access handler (see libmicrohttpd's `MHD_AccessHandlerCallback` protocol:
    /// a first call with the head, then one per body piece, then a last call with no data).
    func handle(
        _ context: HTTPServerRequestContext, connection: OpaquePointer, url: String, method: String, version: String,
        upload: UnsafeRawPointer?, uploadSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        if context.responded { return .YES }
        guard let head = context.head else {
            let head = makeHead(context, connection: connection, url: url, method: method, version: version)
            context.head = head
            context.sink = bodySink(head)
            if context.sink == nil, let length = head.header("Content-Length").flatMap(Int.init),
                length > maxRequestBodyBytes
            {
                return respond(.text("payload too large\n", status: 413), context: context, connection: connection)
            }
            return .YES
        }
        if uploadSize.pointee > 0 {
            let chunk = UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee)
            uploadSize.pointee = 0
            if let sink = context.sink {
                sink.append(chunk)
            } else if context.body.count + chunk.count > maxRequestBodyBytes {
                context.tooLarge = true
                context.body = Data()
            } else if !context.tooLarge {
                context.body.append(contentsOf: chunk)
            }
            return .YES
        }
        if context.tooLarge {
            return respond(.text("payload too large\n", status: 413), context: context, connection: connection)
        }
        var request = head
        request.body = context.body
        context.body = Data()
        requests.add(1, ordering: .relaxed)
        let response = handler(request, context.sink)
        return respond(response, context: context, connection: connection)
    }

    private func makeHead(
        _ context: HTTPServerRequestContext, connection: OpaquePointer, url: String, method: String, version: String
    ) -> HTTPServer.Request {
        var headers = HeaderCollector()
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, serverHeaderIterator, pointer)
        }
        var rawQuery: String?
        if let mark = context.rawURI.firstIndex(of: "?") {
            rawQuery = String(context.rawURI[context.rawURI.index(after: mark)...])
        }
        let (address, port) = Self.peer(httpdns_mhd_client_address(connection))
        return HTTPServer.Request(
            method: method, path: url, rawQuery: rawQuery,
            queryItems: rawQuery.map(HTTPServer.QueryItem.parse) ?? [],
            headers: headers.headers, body: Data(), remoteAddress: address, remotePort: port, httpVersion: version)
    }

    private func respond(
        _ response: HTTPServer.Response, context: HTTPServerRequestContext, connection: OpaquePointer
    ) -> MHD_Result {
        context.responded = true
        let made: OpaquePointer?
        switch response.body {
        case .data(let data):
            made = data.withUnsafeBytes { bytes -> OpaquePointer? in
                // libmicrohttpd accepts NULL for an empty body.
                let base = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) }
                return MHD_create_response_from_buffer(bytes.count, base, .RESPMEM_MUST_COPY)
            }
        case .stream(let length, let producer):
            let reader = HTTPServerStreamReader(producer: producer)
            let size = length.map { UInt64(max(0, $0)) } ?? httpdns_mhd_size_unknown()
            made = MHD_create_response_from_callback(
                size, 16 * 1024, serverContentReader, Unmanaged.passRetained(reader).toOpaque(), serverContentReaderFree)
        }
        guard let made else { return .NO }
        for header in response.headers {
            // libmicrohttpd refuses names/values with CR or LF; such fields are dropped.
            _ = MHD_add_response_header(made, header.name, header.value)
        }
        let result = MHD_queue_response(connection, UInt32(clamping: response.status), made)
        MHD_destroy_response(made)
        return result
    }

    static func peer(_ address: UnsafePointer<sockaddr>?) -> (HTTPDNSIPAddress?, Int) {
        guard let address else { return (nil, 0) }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var storage = pointer.pointee.sin_addr
                let bytes = withUnsafeBytes(of: &storage) { Array($0) }
                return (HTTPDNSIPAddress(bytes: bytes), Int(UInt16(bigEndian: pointer.pointee.sin_port)))
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var storage = pointer.pointee.sin6_addr
                let bytes = withUnsafeBytes(of: &storage) { Array($0) }
                return (HTTPDNSIPAddress(bytes: bytes), Int(UInt16(bigEndian: pointer.pointee.sin6_port)))
            }
        default:
            return (nil, 0)
        }
    }
}

/// Per-request state, created when the request line arrives and released when the request ends.
/// libmicrohttpd calls back for one request from its connection's thread only.
final class HTTPServerRequestContext {
    let rawURI: String
    var head: HTTPServer.Request?
    var sink: (any HTTPServer.BodySink)?
    var body = Data()
    var tooLarge = false
    var responded = false

    init(rawURI: String) {
        self.rawURI = rawURI
    }
}

/// Header fields gathered by `MHD_get_connection_values`.
struct HeaderCollector {
    var headers: [HTTPServer.Header] = []
}

/// Pulls chunks from a streaming response body for libmicrohttpd's content reader.
final class HTTPServerStreamReader {
    let producer: @Sendable () -> Data?
    var pending = Data()
    var ended = false

    init(producer: @escaping @Sendable () -> Data?) {
        self.producer = producer
    }

    /// Fills `buffer`; returns the count, or nil at the end of the stream.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while pending.isEmpty {
            if ended { return nil }
            guard let next = producer() else {
                ended = true
                return nil
            }
            pending = next
        }
        let count = min(buffer.count, pending.count)
        pending.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: pending.startIndex..<(pending.startIndex + count))
        pending = pending.count == count ? Data() : Data(pending.dropFirst(count))
        return count
    }
}
