import CCurl
import Foundation
import HTTPDNSCore

extension CurlTransfer {
    /// Sets every option of the easy handle. Called once, before the handle reaches the loop.
    func configure(_ request: HTTPTransportRequest, configuration: HTTPTransport.Configuration) throws(HTTPTransportError) {
        guard let easy else { return }
        let url = request.url
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            throw HTTPTransportError(.badURL, "only http and https URLs with a host are supported", host: url.host)
        }
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(HTTPTransportHeader.isTokenByte) else {
            throw HTTPTransportError(.invalidRequest, "malformed method", host: host)
        }
        for header in request.headers where !header.hasValidName || !header.hasValidValue {
            throw HTTPTransportError(.invalidRequest, "malformed header field \(header.name.debugDescription)", host: host)
        }

        let context = Unmanaged.passUnretained(self).toOpaque()
        try check(httpdns_easy_setopt_string(easy, CURLOPT_URL, url.absoluteString), "URL", badURL: true)
        try check(httpdns_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        try check(httpdns_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        try check(httpdns_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "nosignal")
        // The layer above decides about redirects (and re-resolves the new host through HTTPDNS).
        try check(httpdns_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "redirects")
        try check(httpdns_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1), "verify peer")
        try check(httpdns_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2), "verify host")
        let version = configuration.enableHTTP2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1
        try check(httpdns_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, version), "HTTP version")
        if let proxy = request.proxy {
            try check(httpdns_easy_setopt_string(easy, CURLOPT_PROXY, proxy), "proxy")
            // The caller applied no_proxy already; libcurl would otherwise read it again from the environment.
            try check(httpdns_easy_setopt_string(easy, CURLOPT_NOPROXY, ""), "no proxy")
        } else if !configuration.useEnvironmentProxy {
            // An empty proxy disables http_proxy and friends: a pinned address must be the peer.
            try check(httpdns_easy_setopt_string(easy, CURLOPT_PROXY, ""), "proxy")
        }
        if request.freshConnection {
            try check(httpdns_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1), "fresh connect")
            try check(httpdns_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1), "forbid reuse")
        }
        if request.connectGate != nil {
            try check(httpdns_easy_setopt_prereq_function(easy, CURLOPT_PREREQFUNCTION, curlPrereqCallback), "prereq callback")
            try check(httpdns_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, context), "prereq data")
        }
        if let userAgent = configuration.userAgent {
            try check(httpdns_easy_setopt_string(easy, CURLOPT_USERAGENT, userAgent), "user agent")
        }

        try configureTimeouts(request.timeouts, easy: easy)
        try configureTrust(request.trust, easy: easy)
        try configurePinning(request, defaultPort: scheme == "https" ? 443 : 80, easy: easy)
        try configureMethodAndBody(request, easy: easy, context: context)

        // "" offers every coding libcurl was built with; NULL turns decoding off.
        try check(httpdns_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, request.decodesContent ? "" : nil), "accept encoding")
        if let maxResponseBytes = request.maxResponseBytes {
            try check(httpdns_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxResponseBytes)), "max size")
        }
        try check(httpdns_easy_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback), "header callback")
        try check(httpdns_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context), "header data")
        try check(httpdns_easy_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback), "write callback")
        try check(httpdns_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context), "write data")
    }

    private func configureTimeouts(_ timeouts: HTTPTransportRequest.Timeouts, easy: UnsafeMutableRawPointer) throws(HTTPTransportError) {
        try check(httpdns_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(timeouts.connect)), "connect timeout")
        try check(httpdns_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeouts.total.map(Self.milliseconds) ?? 0), "timeout")
        if let idle = timeouts.idle {
            let seconds = max(1, (Self.milliseconds(idle) + 999) / 1000)
            try check(httpdns_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1), "low speed limit")
            try check(httpdns_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, seconds), "low speed time")
        }
    }

    private func configureTrust(_ trust: HTTPDNSTrust, easy: UnsafeMutableRawPointer) throws(HTTPTransportError) {
        switch trust {
        case .system:
            break
        case .caFile(let path):
            try check(httpdns_easy_setopt_string(easy, CURLOPT_CAINFO, path), "CA file")
            try check(httpdns_easy_setopt_string(easy, CURLOPT_CAPATH, nil), "CA path")
        case .caPEM(let pem):
            try check(httpdns_easy_setopt_string(easy, CURLOPT_CAINFO, nil), "CA file")
            try check(httpdns_easy_setopt_string(easy, CURLOPT_CAPATH, nil), "CA path")
            var pem = pem
            let code = pem.withUnsafeMutableBytes { bytes -> CURLcode in
                var blob = curl_blob(data: bytes.baseAddress, len: bytes.count, flags: UInt32(CURL_BLOB_COPY))
                return httpdns_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, &blob)
            }
            try check(code, "CA blob")
        }
    }

    private func configurePinning(
        _ request: HTTPTransportRequest, defaultPort: Int, easy: UnsafeMutableRawPointer
    ) throws(HTTPTransportError) {
        guard !request.pinnedAddresses.isEmpty else { return }
        let port = request.url.port ?? defaultPort
        guard let entries = CurlPinning.entries(port: port, addresses: request.pinnedAddresses) else {
            throw HTTPTransportError(.invalidRequest, "no usable pinned address", host: host)
        }
        try check(httpdns_easy_setopt_slist(easy, CURLOPT_CONNECT_TO, makeList([entries.connectTo])), "connect-to")
        try check(httpdns_easy_setopt_slist(easy, CURLOPT_RESOLVE, makeList([entries.resolve])), "resolve")
    }

    private func configureMethodAndBody(
        _ request: HTTPTransportRequest, easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer
    ) throws(HTTPTransportError) {
        var lines = request.headers.map { "\($0.name): \($0.value)" }
        let method = request.method
        if let body = request.body {
            self.body = body.storage
            try check(httpdns_easy_setopt_long(easy, CURLOPT_POST, 1), "post")
            try check(httpdns_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.length ?? -1)), "body size")
            try check(httpdns_easy_setopt_read_function(easy, CURLOPT_READFUNCTION, curlReadCallback), "read callback")
            try check(httpdns_easy_setopt_pointer(easy, CURLOPT_READDATA, context), "read data")
            try check(httpdns_easy_setopt_seek_function(easy, CURLOPT_SEEKFUNCTION, curlSeekCallback), "seek callback")
            try check(httpdns_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, context), "seek data")
            // libcurl would otherwise label every POST body as a form.
            if request.headers.httpdnsFirstValue("Content-Type") == nil { lines.append("Content-Type:") }
            if method != "POST" {
                try check(httpdns_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method), "method")
            }
        } else if method == "GET" {
            try check(httpdns_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "get")
        } else if method == "HEAD" {
            try check(httpdns_easy_setopt_long(easy, CURLOPT_NOBODY, 1), "head")
        } else {
            if method == "POST" {
                try check(httpdns_easy_setopt_long(easy, CURLOPT_POST, 1), "post")
                try check(httpdns_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0), "body size")
                if request.headers.httpdnsFirstValue("Content-Type") == nil { lines.append("Content-Type:") }
            }
            try check(httpdns_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method), "method")
        }
        if !lines.isEmpty {
            try check(httpdns_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, makeList(lines)), "headers")
        }
    }

    /// Builds a `curl_slist` that lives as long as the transfer.
    private func makeList(_ items: [String]) throws(HTTPTransportError) -> UnsafeMutablePointer<curl_slist> {
        var list: UnsafeMutablePointer<curl_slist>?
        for item in items {
            guard let extended = curl_slist_append(list, item) else {
                if let list { curl_slist_free_all(list) }
                throw HTTPTransportError(.unknown, "out of memory building option list", host: host)
            }
            list = extended
        }
        guard let list else { throw HTTPTransportError(.unknown, "empty option list", host: host) }
        lists.append(list)
        return list
    }

    private func check(_ code: CURLcode, _ what: String, badURL: Bool = false) throws(HTTPTransportError) {
        guard code != CURLE_OK else { return }
        let text = String(cString: curl_easy_strerror(code))
        throw HTTPTransportError(
            badURL ? .badURL : .invalidRequest, "\(what): \(text)", curlCode: Int(code.rawValue), host: host)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 1 }
        guard seconds < Int64(Int32.max) / 1000 else { return Int(Int32.max) }
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
