@_spi(HTTPDNSPackage) import HTTPDNSCore

/// The request head a client sends to the proxy (RFC 9112 §3), parsed from raw bytes with fixed
/// limits: only what a proxy needs — the method, the target, the header fields — and nothing more.
///
/// Strict on purpose: every line must end in CRLF, no obsolete line folding, header names are
/// tokens and values carry no control characters, `Content-Length` and `Transfer-Encoding` never
/// appear together (RFC 9112 §6.1: a request smuggling vector). Whatever is rejected gets a 4xx
/// and the connection is closed; nothing of it reaches an upstream.
package struct ProxyRequestHead: Sendable, Equatable {
    /// Where the client wants to go.
    package enum Target: Sendable, Equatable {
        /// `CONNECT host:port` (authority-form, RFC 9110 §9.3.6): a byte tunnel.
        case tunnel(host: String, port: UInt16)
        /// `GET http://host:port/path` (absolute-form, RFC 9112 §3.2.2): a forwarded request.
        case forward(host: String, port: UInt16, path: String)

        package var host: String {
            switch self {
            case .tunnel(let host, _), .forward(let host, _, _): host
            }
        }

        package var port: UInt16 {
            switch self {
            case .tunnel(_, let port), .forward(_, let port, _): port
            }
        }
    }

    /// One header field as received (name case kept, value trimmed of surrounding blanks). The value
    /// holds one character per byte (``ProxyLatin1``), so obs-text passes on unchanged.
    package struct Field: Sendable, Equatable {
        package var name: String
        package var value: String
    }

    /// The outcome of looking at the bytes received so far.
    package enum Parse: Sendable, Equatable {
        /// No blank line yet; read more (the size limit has not been reached).
        case incomplete
        /// A whole head of `length` bytes; bytes after it belong to the tunnel or the body.
        case complete(ProxyRequestHead, length: Int)
    }

    /// Limits: a head larger than ``maximumBytes`` is refused with 431, more fields than
    /// ``maximumFields`` with 431, a method longer than ``maximumMethodBytes`` with 400.
    package static let maximumBytes = 16 * 1024
    package static let maximumFields = 100
    package static let maximumMethodBytes = 32

    package var method: String
    package var target: Target
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    package var fields: [Field]

    /// The value of the first field named `name` (given in lower case; compared case-insensitively), if any.
    package func value(of name: String) -> String? {
        fields.first { HTTPDNSASCII.equalsIgnoringCase($0.name, name) }?.value
    }

    /// Parses the start of `bytes`.
    ///
    /// - Returns: `.incomplete` while no complete head is there and the limit is not reached.
    /// - Throws: ``ProxyHeadError`` for anything malformed or over a limit, as soon as it is seen
    ///   (a bare LF is refused at once, so a client using LF line ends gets an answer, not a wait).
    package static func parse(_ bytes: some Collection<UInt8>) throws(ProxyHeadError) -> Parse {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(ProxyHeadError) -> Parse in try parse(contiguous: UnsafeRawBufferPointer(buffer)) }
        }
        if let contiguous { return try contiguous.get() }
        return try Array(bytes.prefix(maximumBytes + 1)).withUnsafeBytes { buffer in
            Result { () throws(ProxyHeadError) -> Parse in try parse(contiguous: buffer) }
        }.get()
    }

    /// ``parse(_:)`` on bytes in memory, where the loop has them: no copy, one pass to the blank line.
    static func parse(contiguous bytes: UnsafeRawBufferPointer) throws(ProxyHeadError) -> Parse {
        let count = min(bytes.count, maximumBytes + 1)
        var end = 0
        var index = 0
        while index < count {
            if bytes[index] == 0x0A {
                guard index > 0, bytes[index - 1] == 0x0D else { throw ProxyHeadError(.malformed, "bare LF in the request head") }
                if index >= 3, bytes[index - 2] == 0x0A, bytes[index - 3] == 0x0D {
                    end = index + 1
                    break
                }
            }
            index += 1
        }
        guard end > 0, end <= maximumBytes else {
            if count > maximumBytes { throw ProxyHeadError(.tooLarge, "request head over \(maximumBytes) bytes") }
            return .incomplete
        }
        let head = try parseLines(UnsafeRawBufferPointer(rebasing: bytes[0..<(end - 2)]))
        return .complete(head, length: end)
    }

    /// Parses the head without its final empty line: every line ends in CRLF (a bare LF was refused).
    private static func parseLines(_ bytes: UnsafeRawBufferPointer) throws(ProxyHeadError) -> ProxyRequestHead {
        // Each line is [start, LF - 1): the CR before every LF is dropped.
        func lineEnd(from start: Int) -> Int {
            var index = start
            while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            return index
        }
        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        guard !bytes.isEmpty else { throw ProxyHeadError(.malformed, "empty request head") }
        let requestEnd = lineEnd(from: 0)
        let requestLine = 0..<(requestEnd - 1)
        var spaces: [Int] = []
        for index in requestLine where bytes[index] == 0x20 {
            spaces.append(index)
            if spaces.count > 2 { break }
        }
        guard spaces.count == 2 else { throw ProxyHeadError(.malformed, "request line is not METHOD TARGET VERSION") }
        let method = 0..<spaces[0]
        guard !method.isEmpty, method.count <= maximumMethodBytes, method.allSatisfy({ isTokenByte(bytes[$0]) }) else {
            throw ProxyHeadError(.malformed, "bad method")
        }
        let version = UnsafeRawBufferPointer(rebasing: bytes[(spaces[1] + 1)..<requestLine.upperBound])
        let minorVersion: Int
        if version.elementsEqual("HTTP/1.1".utf8) {
            minorVersion = 1
        } else if version.elementsEqual("HTTP/1.0".utf8) {
            minorVersion = 0
        } else {
            throw ProxyHeadError(.unsupportedVersion, "only HTTP/1.0 and HTTP/1.1 are spoken")
        }
        let fieldsStart = requestEnd + 1
        var lineCount = 0
        for index in fieldsStart..<bytes.count where bytes[index] == 0x0A { lineCount += 1 }
        guard lineCount <= maximumFields else { throw ProxyHeadError(.tooLarge, "more than \(maximumFields) header fields") }
        var fields: [Field] = []
        fields.reserveCapacity(lineCount)
        var start = fieldsStart
        while start < bytes.count {
            let end = lineEnd(from: start)
            let line = start..<(end - 1)
            start = end + 1
            guard let first = line.first.map({ bytes[$0] }) else { throw ProxyHeadError(.malformed, "empty header line") }
            guard first != 0x20, first != 0x09 else { throw ProxyHeadError(.malformed, "obsolete line folding") }
            guard let colon = line.first(where: { bytes[$0] == 0x3A }) else { throw ProxyHeadError(.malformed, "header line without a colon") }
            let name = line.lowerBound..<colon
            guard !name.isEmpty, name.allSatisfy({ isTokenByte(bytes[$0]) }) else { throw ProxyHeadError(.malformed, "bad header name") }
            var valueStart = colon + 1
            var valueEnd = line.upperBound
            while valueStart < valueEnd, bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            let value = valueStart..<valueEnd
            guard value.allSatisfy({ bytes[$0] == 0x09 || (bytes[$0] >= 0x20 && bytes[$0] != 0x7F) }) else {
                throw ProxyHeadError(.malformed, "control character in a header value")
            }
            fields.append(Field(name: text(name), value: ProxyLatin1.string(UnsafeRawBufferPointer(rebasing: bytes[value]))))
        }
        let methodText = text(method)
        let target = try parseTarget(Array(bytes[(spaces[0] + 1)..<spaces[1]])[...], method: methodText)
        let head = ProxyRequestHead(method: methodText, target: target, minorVersion: minorVersion, fields: fields)
        try head.checkFraming()
        return head
    }

    /// RFC 9112 §6.1 and §6.3: one unambiguous body length, or none.
    private func checkFraming() throws(ProxyHeadError) {
        let lengths = fields.filter { HTTPDNSASCII.equalsIgnoringCase($0.name, "content-length") }.map(\.value)
        let encodings = fields.filter { HTTPDNSASCII.equalsIgnoringCase($0.name, "transfer-encoding") }
        if !lengths.isEmpty, !encodings.isEmpty {
            throw ProxyHeadError(.malformed, "both Content-Length and Transfer-Encoding")
        }
        for length in lengths where length.isEmpty || !length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) || length != lengths[0] {
            throw ProxyHeadError(.malformed, "bad or conflicting Content-Length")
        }
    }

    /// The target: authority-form for CONNECT, absolute-form `http://` for everything else.
    private static func parseTarget(_ text: ArraySlice<UInt8>, method: String) throws(ProxyHeadError) -> Target {
        guard !text.isEmpty else { throw ProxyHeadError(.malformed, "empty request target") }
        guard text.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw ProxyHeadError(.malformed, "bad byte in the request target") }
        if method == "CONNECT" {
            guard let (host, port) = parseAuthority(text, defaultPort: nil) else {
                throw ProxyHeadError(.badTarget, "CONNECT needs host:port")
            }
            return .tunnel(host: host, port: port)
        }
        if HTTPDNSASCII.hasPrefixIgnoringCase(text, "https://") {
            throw ProxyHeadError(.unsupportedTarget, "https:// goes through CONNECT")
        }
        guard HTTPDNSASCII.hasPrefixIgnoringCase(text, "http://") else {
            throw ProxyHeadError(.badTarget, "not a proxy request (absolute http:// URL or CONNECT expected)")
        }
        let rest = text.dropFirst(7)
        let authorityEnd = rest.firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? rest.endIndex
        guard let (host, port) = parseAuthority(rest[rest.startIndex..<authorityEnd], defaultPort: 80) else {
            throw ProxyHeadError(.badTarget, "bad host in the URL")
        }
        var path = rest[authorityEnd...]
        if let hash = path.firstIndex(of: 0x23) { path = path[path.startIndex..<hash] }
        var pathText = String(decoding: path, as: UTF8.self)
        if !pathText.hasPrefix("/") { pathText = "/" + pathText }
        return .forward(host: host, port: port, path: pathText)
    }

    /// `name:port`, `a.b.c.d:port` or `[v6]:port`; the port may be left out only with a default.
    /// User info (`user@host`) is refused.
    static func parseAuthority(_ text: ArraySlice<UInt8>, defaultPort: UInt16?) -> (String, UInt16)? {
        guard !text.isEmpty, !text.contains(0x40) else { return nil }
        var hostPart = text
        var port = defaultPort
        if text.first == 0x5B {  // [v6]
            guard let close = text.firstIndex(of: 0x5D) else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.first == 0x3A, let parsed = parsePort(after.dropFirst()) else { return nil }
                port = parsed
            }
            guard let address = HTTPDNSIPAddress(String(decoding: hostPart, as: UTF8.self)), address.family == .v6 else { return nil }
            guard let port else { return nil }
            return (address.description, port)
        }
        if let colon = text.lastIndex(of: 0x3A) {
            hostPart = text[text.startIndex..<colon]
            guard let parsed = parsePort(text[(colon + 1)...]) else { return nil }
            port = parsed
        }
        guard let port, !hostPart.contains(0x3A) else { return nil }
        let host = String(decoding: hostPart, as: UTF8.self)
        if let address = HTTPDNSIPAddress(host) { return (address.description, port) }
        guard HTTPDNSHostPolicy.isValidHostName(host) else { return nil }
        return (HTTPDNSHostPolicy.normalize(host), port)
    }

    private static func parsePort(_ text: ArraySlice<UInt8>) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard let value = Int(String(decoding: text, as: UTF8.self)), (1...65_535).contains(value) else { return nil }
        return UInt16(value)
    }

    /// RFC 9110 §5.6.2 token characters.
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// Why the proxy refused a request head; ``status`` is the HTTP status it answers with.
package struct ProxyHeadError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable {
        case malformed
        case tooLarge
        case unsupportedVersion
        case badTarget
        case unsupportedTarget
    }

    package var code: Code
    package var detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// 400, 431 (RFC 6585), 505 or 501.
    package var status: Int {
        switch code {
        case .malformed, .badTarget: 400
        case .tooLarge: 431
        case .unsupportedVersion: 505
        case .unsupportedTarget: 501
        }
    }

    package var description: String { "\(code.rawValue): \(detail)" }
}

/// Header field values as bytes in a String: one character per byte (ISO-8859-1), and back.
///
/// RFC 9110 §5.5: field values are US-ASCII in practice, but octets past it (obs-text) may appear
/// and a recipient treats them as opaque data. A forwarded head is rebuilt from text, so a value
/// decoded as UTF-8 would come out changed (an invalid sequence as U+FFFD); decoded byte for byte it
/// comes out as it came in. Everything else in a head (method, target, names) is ASCII, the same
/// either way.
package enum ProxyLatin1 {
    /// One character (U+0000–U+00FF) per byte.
    package static func string<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return String(scalars)
    }

    /// The bytes of a text made by ``string(_:)`` and ASCII (every character below U+0100).
    package static func bytes(_ text: String) -> [UInt8] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return Array(text.utf8) }
        return text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
    }
}
