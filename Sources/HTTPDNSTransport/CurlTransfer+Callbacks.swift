import CCurl
import Foundation

// libcurl's callbacks are C function pointers: no captures, the transfer comes back through the
// user-data pointer. The loop's `active` table holds a strong reference while libcurl can call,
// so an unretained reference is enough.

let curlHeaderCallback: curl_write_callback = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

let curlWriteCallback: curl_write_callback = { buffer, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

let curlReadCallback: curl_read_callback = { buffer, size, count, context in
    guard let buffer, let context else { return httpdns_curl_readfunc_abort() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.readBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

let curlSeekCallback: curl_seek_callback = { context, offset, origin in
    guard let context else { return Int32(CURL_SEEKFUNC_FAIL) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.seekBody(to: offset, origin: origin) ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_CANTSEEK)
}

let curlPrereqCallback: curl_prereq_callback = { context, _, _, _, _ in
    guard let context else { return Int32(CURL_PREREQFUNC_ABORT) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.connectionReady() ? Int32(CURL_PREREQFUNC_OK) : Int32(CURL_PREREQFUNC_ABORT)
}

extension CurlTransfer {
    /// Copies the next request-body bytes for libcurl (loop thread).
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !isCancelled, let body else { return httpdns_curl_readfunc_abort() }
        switch body {
        case .data(let data):
            let count = min(buffer.count, data.count - bodyOffset)
            guard count > 0 else { return 0 }
            let start = data.startIndex + bodyOffset
            data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
            bodyOffset += count
            return count
        case .source(let source):
            do {
                let count = try source.read(into: buffer)
                return max(0, min(count, buffer.count))
            } catch {
                abortError = HTTPTransportError(.bodySourceFailed, "\(error)", host: host)
                return httpdns_curl_readfunc_abort()
            }
        }
    }

    /// Rewinds the request body when libcurl must send it again (loop thread).
    func seekBody(to offset: curl_off_t, origin: Int32) -> Bool {
        guard origin == SEEK_SET, let body else { return false }
        switch body {
        case .data(let data):
            guard offset >= 0, offset <= Int64(data.count) else { return false }
            bodyOffset = Int(offset)
            return true
        case .source(let source):
            return offset == 0 && source.rewind()
        }
    }

    /// The error for a failed `CURLcode`, with libcurl's message and what is known about the peer.
    func error(for code: CURLcode) -> HTTPTransportError {
        var message = String(cString: errorBuffer)
        if message.isEmpty { message = String(cString: curl_easy_strerror(code)) }
        if !pinned.isEmpty { message = CurlPinning.humanize(message, host: host, addresses: pinned) }
        var error = abortError ?? HTTPTransportError(isProxyFailure(code) ? .proxyConnectionFailed : Self.errorCode(for: code), message)
        error.curlCode = Int(code.rawValue)
        error.host = host
        error.attemptedAddress = primaryAddress ?? (pinned.count == 1 ? pinned[0] : nil)
        error.requestBytesSent = requestBytesSent
        return error
    }

    /// Whether `code` means the proxy this transfer went through failed, rather than the origin.
    ///
    /// Through a proxy libcurl connects only to the proxy, so a failed connect is the proxy's; a
    /// refused tunnel is reported by libcurl 7.88 as `CURLE_RECV_ERROR` ("CONNECT tunnel failed,
    /// response 403"; later versions use `CURLE_COULDNT_CONNECT`), told apart by the proxy's answer
    /// to CONNECT (`CURLINFO_HTTP_CONNECTCODE`).
    func isProxyFailure(_ code: CURLcode) -> Bool {
        guard proxy != nil else { return false }
        switch code {
        case CURLE_COULDNT_RESOLVE_PROXY, CURLE_PROXY, CURLE_COULDNT_CONNECT:
            return true
        default:
            var connectCode = 0
            if let easy { _ = httpdns_easy_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &connectCode) }
            return connectCode >= 300
        }
    }

    static func errorCode(for code: CURLcode) -> HTTPTransportError.Code {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .cannotFindHost
        case CURLE_COULDNT_CONNECT:
            return .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_CACERT_BADFILE:
            return .serverCertificateUntrusted
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED,
            CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_INVALIDCERTSTATUS:
            return .secureConnectionFailed
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2,
            CURLE_HTTP2_STREAM, CURLE_HTTP3, CURLE_SEND_FAIL_REWIND:
            return .networkConnectionLost
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING:
            return .badServerResponse
        case CURLE_FILESIZE_EXCEEDED:
            return .responseTooLarge
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .badURL
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        default:
            return .unknown
        }
    }
}
