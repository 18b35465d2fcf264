import CH2O
import CQUIC
import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import Synchronization

extension HTTPServer {
    /// One request's way back to its client: ``respond(_:)`` from any thread, once (later calls are
    /// ignored). The response is queued to the loop thread, which writes it; if the client has gone
    /// meanwhile it is dropped there.
    package final class Exchange: Sendable {
        let core: HTTPServerCore
        let token: UInt
        /// HEAD: the head of the response goes out, its body does not (HTTP/2 would reset the stream).
        let isHead: Bool
        /// A message of a ``MessageStream``: the token is its `httpdns_h2o_stream_message`.
        let isMessage: Bool
        /// A DNS-over-QUIC query: the token is its `httpdns_quic_message`, answered through this server.
        let quic: HTTPServerQUIC?
        private let answered = Atomic<Bool>(false)

        init(core: HTTPServerCore, token: UInt, isHead: Bool, isMessage: Bool = false, quic: HTTPServerQUIC? = nil) {
            self.core = core
            self.token = token
            self.isHead = isHead
            self.isMessage = isMessage
            self.quic = quic
        }

        /// Sends `response`. A streaming body is pulled on a thread of its own, one chunk per
        /// `proceed` of the loop, so a slow client holds at most one chunk in memory.
        package func respond(_ response: Response) {
            guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
            if isMessage { return respondToMessage(response) }
            switch response.body {
            case .data(let data) where isHead:
                postHead(response, body: Data(), contentLength: Int64(data.count), final: true)
                core.finished(token)
            case .stream(let length, _) where isHead:
                postHead(response, body: Data(), contentLength: length.map { Int64(max(0, $0)) } ?? 0, final: true)
                core.finished(token)
            case .data(let data):
                postHead(response, body: data, contentLength: Int64(data.count), final: true)
                core.finished(token)
            case .stream(let length, let producer):
                let pump = HTTPServerStreamPump(core: core, token: token, producer: producer)
                core.pumps.withLock { $0[token] = pump }
                pump.start()
                postHead(response, body: Data(), contentLength: length.map { Int64(max(0, $0)) } ?? -1, final: false)
            }
        }

        /// A message stream carries a `200`'s body and nothing else: any other answer (or a
        /// streaming body) closes the connection once the messages before it are answered.
        private func respondToMessage(_ response: Response) {
            if let quic {
                quic.answer(token, response)
                core.finished(token)
                return
            }
            let message = OpaquePointer(bitPattern: token)
            if response.status == 200, case .data(let data) = response.body {
                data.withUnsafeBytes { bytes in
                    // An empty body is still an answer: the C side takes a non-NULL pointer as one.
                    let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
                    core.post { server in httpdns_h2o_post_stream_answer(server, message, base, bytes.count) }
                }
            } else {
                core.post { server in httpdns_h2o_post_stream_answer(server, message, nil, 0) }
            }
            core.finished(token)
        }

        private func postHead(_ response: Response, body: Data, contentLength: Int64, final: Bool) {
            // Names and values back to back in one buffer, sized first (on the stack when small);
            // the C side copies them once.
            var size = 0
            for header in response.headers { size += header.name.utf8.count + header.value.utf8.count }
            let status = Int32(clamping: (100...999).contains(response.status) ? response.status : 500)
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { text in
                withUnsafeTemporaryAllocation(of: Int.self, capacity: response.headers.count * 2) { lengths in
                    var end = 0
                    var count = 0
                    func append(_ string: String) {
                        let start = end
                        end = text[start...].initialize(fromContentsOf: string.utf8)
                        lengths[count] = end - start
                        count += 1
                    }
                    for header in response.headers where Self.isSendable(header) {
                        append(header.name)
                        append(header.value)
                    }
                    body.withUnsafeBytes { bytes in
                        core.post { server in
                            httpdns_h2o_post_head(
                                server, UnsafeMutableRawPointer(bitPattern: token), status, UnsafeRawPointer(text.baseAddress),
                                lengths.baseAddress, count / 2, contentLength, bytes.baseAddress, bytes.count, final ? 1 : 0)
                        }
                    }
                }
            }
        }

        /// Fields with CR, LF or NUL could split the response: they are dropped, as are the framing
        /// fields the server writes itself.
        static func isSendable(_ header: Header) -> Bool {
            !header.name.isEmpty
                && !header.name.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 >= 0x7f }
                && !header.value.utf8.contains { $0 == 0x0d || $0 == 0x0a || $0 == 0 }
                && !HTTPDNSASCII.equalsIgnoringCase(header.name, "content-length")
                && !HTTPDNSASCII.equalsIgnoringCase(header.name, "transfer-encoding")
        }
    }
}

/// Pulls a streaming response body on a thread of its own, one chunk per `proceed` from the loop.
///
/// Exactly one terminal message reaches the loop: the final (empty) chunk, or a release after the
/// client went away; both are posted under the lock that `proceed(cancelled:)` takes.
final class HTTPServerStreamPump: @unchecked Sendable {
    private let core: HTTPServerCore
    private let token: UInt
    private let producer: @Sendable () -> Data?
    private let condition = NSCondition()
    private var ready = 0
    private var cancelled = false
    private var ended = false

    init(core: HTTPServerCore, token: UInt, producer: @escaping @Sendable () -> Data?) {
        self.core = core
        self.token = token
        self.producer = producer
    }

    /// Starts the pulling thread; it waits for the loop's first `proceed`.
    func start() {
        Thread { [self] in run() }.start()
    }

    /// From the loop: the next chunk may go, or (cancelled) the client is gone.
    func proceed(cancelled: Bool) {
        condition.lock()
        if cancelled { self.cancelled = true } else { ready += 1 }
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while ready == 0, !cancelled { condition.wait() }
            if cancelled {
                let owner = !ended
                ended = true
                condition.unlock()
                if owner { finish(release: true) }
                return
            }
            ready -= 1
            condition.unlock()
            let chunk = producer()
            condition.lock()
            if cancelled {
                ended = true
                condition.unlock()
                finish(release: true)
                return
            }
            let data = chunk ?? Data()
            let final = chunk == nil
            // The token names the C request only until the terminal message is handled: forget it
            // first, so that a request made later at the same address is not mistaken for this one.
            if final { forget() }
            data.withUnsafeBytes { bytes in
                core.post { server in
                    httpdns_h2o_post_chunk(server, UnsafeMutableRawPointer(bitPattern: token), bytes.baseAddress, bytes.count, final ? 1 : 0)
                }
            }
            if final { ended = true }
            condition.unlock()
            if final {
                core.finished(token)
                return
            }
        }
    }

    /// Removes this pump from the loop's table, unless another request has taken the token since.
    private func forget() {
        core.pumps.withLock { pumps in
            if pumps[token] === self { pumps[token] = nil }
        }
    }

    private func finish(release: Bool) {
        forget()
        if release {
            core.post { server in httpdns_h2o_post_release(server, UnsafeMutableRawPointer(bitPattern: token)) }
        }
        core.finished(token)
    }
}
