import CCurl
import Foundation
import HTTPDNSCore
import Synchronization

/// One request's easy handle and the state its libcurl callbacks share.
///
/// Built and configured on the caller's thread, then handed to the loop through its mutex-guarded
/// inbox; from then on every member except ``isCancelled`` is touched only on the loop thread
/// (libcurl callbacks and completion), which is why the class can be `@unchecked Sendable`.
final class CurlTransfer: @unchecked Sendable {
    /// The `CURL *`, nil once cleaned up.
    private(set) var easy: UnsafeMutableRawPointer?
    let host: String
    let loop: CurlEventLoop
    /// Keeps the loop thread alive while the transfer runs (its ``CurlLoopOwner``).
    private let owner: any Sendable
    private let delegate: any HTTPTransportDelegate
    private let cancelFlag = Atomic<Bool>(false)

    // Configuration kept alive for libcurl: option lists and the error buffer.
    let errorBuffer: UnsafeMutablePointer<CChar>
    var lists: [UnsafeMutablePointer<curl_slist>] = []
    var body: HTTPTransportBody.Storage?
    var bodyOffset = 0
    let maxResponseBytes: Int?
    let maxHeaderBytes: Int
    let pinned: [HTTPDNSIPAddress]
    let proxy: String?
    let connectGate: (@Sendable (HTTPTransportConnection) -> Bool)?
    /// Where the body waits for its reader; while it is full the transfer is paused.
    let receiveBuffer: HTTPTransportReceiveBuffer?

    // Response state, loop thread only.
    private var headers: [HTTPTransportHeader] = []
    private var headerBytes = 0
    private var headDelivered = false
    private var bodyBytes: Int64 = 0
    /// Set by a callback that aborted the transfer on purpose; reported instead of libcurl's code.
    var abortError: HTTPTransportError?
    private var finished = false

    init(
        request: HTTPTransportRequest,
        configuration: HTTPTransport.Configuration,
        delegate: any HTTPTransportDelegate,
        loop: CurlEventLoop,
        owner: any Sendable
    ) throws(HTTPTransportError) {
        self.host = request.url.host ?? ""
        self.loop = loop
        self.owner = owner
        self.delegate = delegate
        self.maxResponseBytes = request.maxResponseBytes
        self.maxHeaderBytes = configuration.maxResponseHeaderBytes
        self.pinned = request.pinnedAddresses
        self.proxy = request.proxy
        self.connectGate = request.connectGate
        self.receiveBuffer = request.receiveBuffer
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        _ = CurlGlobal.initialized
        guard let easy = curl_easy_init() else {
            throw HTTPTransportError(.unknown, "curl_easy_init failed", host: host)
        }
        self.easy = easy
        try configure(request, configuration: configuration)
    }

    deinit {
        cleanUp()
        errorBuffer.deallocate()
    }

    var isCancelled: Bool { cancelFlag.load(ordering: .acquiring) }

    var cancelledError: HTTPTransportError {
        HTTPTransportError(.cancelled, "cancelled", host: host, requestBytesSent: requestBytesSent)
    }

    /// Marks the transfer cancelled (callbacks stop delivering at once) and asks the loop to remove it.
    func cancel() {
        guard !cancelFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.cancel(self)
    }

    /// Asks the loop to resume a transfer its receive buffer paused (from any thread).
    func resumeReceiving() {
        loop.resume(self)
    }

    /// Frees the easy handle and option lists. The handle must no longer be in the multi handle.
    private func cleanUp() {
        if let easy {
            curl_easy_cleanup(easy)
            self.easy = nil
        }
        for list in lists { curl_slist_free_all(list) }
        lists.removeAll()
    }

    // MARK: Callbacks (loop thread)

    /// One raw header line, status line or the blank line that ends a header block.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Int {
        headerBytes += bytes.count
        if headerBytes > maxHeaderBytes {
            abortError = HTTPTransportError(.responseTooLarge, "response headers exceed \(maxHeaderBytes) bytes", host: host)
            return 0
        }
        // Lines after the head are trailers or 1xx leftovers; they are not reported.
        guard !headDelivered, !isCancelled else { return bytes.count }
        // Parsed as bytes: this runs for every header line of every response.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<end])
        if line.starts(with: CurlTransfer.statusLinePrefix) {
            headers.removeAll()
        } else if line.isEmpty {
            var status = 0
            if let easy { _ = httpdns_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) }
            if status >= 200 {
                if let error = contentLengthError() {
                    abortError = error
                    return 0
                }
                deliverHead(status: status)
            } else {
                headers.removeAll()
            }
        } else if line[0] == 0x20 || line[0] == 0x09, !headers.isEmpty {
            // obs-fold (RFC 9112 §5.2): a continuation of the previous value.
            headers[headers.count - 1].value += " " + CurlTransfer.trimmed(line)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = CurlTransfer.trimmed(UnsafeRawBufferPointer(rebasing: line[0..<colon]))
            let value = CurlTransfer.trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
            headers.append(HTTPTransportHeader(name: name, value: value))
        }
        return bytes.count
    }

    static let statusLinePrefix: [UInt8] = Array("HTTP/".utf8)

    /// The bytes as text without leading and trailing spaces and tabs.
    static func trimmed(_ bytes: UnsafeRawBufferPointer) -> String {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// A piece of the response body.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        // After cancel() the bytes are dropped rather than refused: refusing would end the transfer
        // inside libcurl and hand its connection back for reuse, while the loop thread removes a
        // cancelled transfer with connection reuse forbidden, which is what stops an HTTP/2 server.
        guard !isCancelled else { return bytes.count }
        // The reader is behind: refuse the chunk and pause. libcurl keeps the refused bytes and
        // passes them again once resumed (curl_easy_pause(3)), so nothing is counted or delivered now.
        if let receiveBuffer, !receiveBuffer.offer(bytes.count, from: self) {
            return httpdns_curl_writefunc_pause()
        }
        bodyBytes += Int64(bytes.count)
        if let maxResponseBytes, bodyBytes > Int64(maxResponseBytes) {
            abortError = HTTPTransportError(
                .responseTooLarge, "response body exceeds \(maxResponseBytes) bytes", host: host)
            return 0
        }
        if !headDelivered {
            var status = 0
            if let easy { _ = httpdns_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) }
            deliverHead(status: status)
        }
        delegate.didReceiveData(Data(bytes))
        return bytes.count
    }

    private func contentLengthError() -> HTTPTransportError? {
        guard let maxResponseBytes, let easy else { return nil }
        var length: curl_off_t = -1
        _ = httpdns_easy_getinfo_off_t(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        guard length > Int64(maxResponseBytes) else { return nil }
        return HTTPTransportError(
            .responseTooLarge, "Content-Length \(length) exceeds \(maxResponseBytes) bytes", host: host)
    }

    private func deliverHead(status: Int) {
        headDelivered = true
        var head = HTTPTransportResponseHead(
            statusCode: status, headers: headers, connectedAddress: primaryAddress, httpVersion: httpVersion)
        if let easy { head.timings = HTTPTransportTimings(easy: easy) }
        headers = []
        delegate.didReceiveResponse(head)
    }

    /// The connection is ready and the request not sent yet: asks the connect gate (loop thread).
    func connectionReady() -> Bool {
        guard let connectGate, let easy else { return true }
        let connection = HTTPTransportConnection(address: primaryAddress, timings: HTTPTransportTimings(easy: easy))
        guard connectGate(connection) else {
            abortError = HTTPTransportError(.cancelled, "another connection was ready first", host: host)
            return false
        }
        return true
    }

    // MARK: Completion (loop thread)

    /// Reports libcurl's result for a transfer already removed from the multi handle.
    func finish(code: CURLcode) {
        if isCancelled {
            finish(error: cancelledError)
        } else if code == CURLE_OK {
            if !headDelivered {
                var status = 0
                if let easy { _ = httpdns_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) }
                deliverHead(status: status)
            }
            let metrics = self.metrics
            complete(.success(metrics))
        } else {
            finish(error: error(for: code))
        }
    }

    /// Reports a failure; for a transfer already removed from the multi handle or never added.
    func finish(error: HTTPTransportError) {
        var error = error
        if error.requestBytesSent == 0 { error.requestBytesSent = requestBytesSent }
        complete(.failure(error))
    }

    private func complete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        guard !finished else { return }
        finished = true
        cleanUp()
        loop.complete(delegate, result)
    }

    // MARK: Information

    var requestBytesSent: Int64 {
        guard let easy else { return 0 }
        var headerSize = 0
        var uploaded: curl_off_t = 0
        _ = httpdns_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &headerSize)
        _ = httpdns_easy_getinfo_off_t(easy, CURLINFO_SIZE_UPLOAD_T, &uploaded)
        return Int64(headerSize) + Int64(uploaded)
    }

    var primaryAddress: HTTPDNSIPAddress? {
        guard let easy else { return nil }
        var text: UnsafeMutablePointer<CChar>?
        guard httpdns_easy_getinfo_string(easy, CURLINFO_PRIMARY_IP, &text) == CURLE_OK, let text else { return nil }
        return HTTPDNSIPAddress(String(cString: text))
    }

    var httpVersion: String {
        guard let easy else { return "" }
        var version = 0
        _ = httpdns_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        switch version {
        case CURL_HTTP_VERSION_1_0: return "1.0"
        case CURL_HTTP_VERSION_1_1: return "1.1"
        case CURL_HTTP_VERSION_2_0: return "2"
        case CURL_HTTP_VERSION_3: return "3"
        default: return ""
        }
    }

    private var metrics: HTTPTransportMetrics {
        var metrics = HTTPTransportMetrics()
        guard let easy else { return metrics }
        var connects = 0
        var total: curl_off_t = 0
        _ = httpdns_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        _ = httpdns_easy_getinfo_off_t(easy, CURLINFO_TOTAL_TIME_T, &total)
        metrics.newConnections = connects
        metrics.requestBytesSent = requestBytesSent
        metrics.responseBodyBytes = bodyBytes
        metrics.totalTime = .microseconds(total)
        metrics.timings = HTTPTransportTimings(easy: easy)
        return metrics
    }
}
