#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CTLSClient
import DNSSockets
import Foundation
import HTTPDNSCore

/// An OpenSSL client context (`SSL_CTX`) for one DNS-over-TLS upstream: TLS 1.2 or newer, the
/// peer's chain verified against `trust` and its name against the upstream's (there is no way to
/// turn verification off), loaded once and shared by its connections.
final class DNSStubTLSContext: @unchecked Sendable {
    // Unchecked: an SSL_CTX is configured only here, then only read by SSL_new on the upstream's
    // thread (OpenSSL allows sharing a context that is no longer changed, openssl-threads(7)).
    let context: OpaquePointer

    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when the trust cannot be loaded.
    init(trust: HTTPDNSTrust) throws(HTTPDNSError) {
        var error = [CChar](repeating: 0, count: 256)
        let size = error.count
        let made: OpaquePointer?
        switch trust {
        case .system:
            made = httpdns_tls_client_context(nil, nil, 0, &error, size)
        case .caFile(let path):
            made = httpdns_tls_client_context(path, nil, 0, &error, size)
        case .caPEM(let pem):
            made = pem.withUnsafeBytes { bytes in
                httpdns_tls_client_context(nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, &error, size)
            }
        }
        guard let made else {
            throw HTTPDNSError(.invalidConfiguration, "TLS trust cannot be loaded: \(DNSStubTLSConnection.text(error))")
        }
        context = made
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// The TLS session a DNS-over-TLS upstream resumes its next connection with: the newest one its
/// server gave (OpenSSL's new-session callback puts it here, see `httpdns_tls_session_slot`).
final class DNSStubTLSSessions: @unchecked Sendable {
    // Unchecked: the slot is read and written only on the upstream's I/O thread, by its
    // connections' handshakes and reads; this object only owns the memory.
    let slot: UnsafeMutablePointer<httpdns_tls_session_slot>

    init() {
        slot = UnsafeMutablePointer<httpdns_tls_session_slot>.allocate(capacity: 1)
        slot.initialize(to: httpdns_tls_session_slot(session: nil))
    }

    deinit {
        httpdns_tls_session_slot_clear(slot)
        slot.deallocate()
    }
}

/// One TLS connection of a DNS-over-TLS upstream, owned by the upstream's I/O thread (never shared):
/// a non-blocking TCP connect, the handshake, then DNS messages framed as on TCP (RFC 7858 §3.3,
/// RFC 1035 §4.2.2) both ways. Each step runs when `poll` says the socket is ready and never blocks.
final class DNSStubTLSConnection {
    enum Phase {
        case connecting
        case handshaking
        case open
    }

    private(set) var phase: Phase
    let fd: Int32
    private let ssl: OpaquePointer
    /// Kept while the connection lives: its SSL points at the slot.
    private let sessions: DNSStubTLSSessions
    private let serverName: String
    /// Framed queries not yet written, from ``outputStart``.
    private var output: [UInt8] = []
    private var outputStart = 0
    private var reader = DNSTCPFrameReader()
    /// The last TLS step needs the socket writable to go on.
    private var wantsWrite = false
    /// OpenSSL's text for the last failed step.
    private var error = [CChar](repeating: 0, count: 256)
    private var buffer = [UInt8](repeating: 0, count: 16_384)

    /// Starts connecting to `server`; the handshake verifies `serverName` (also sent as SNI) and
    /// offers the session in `sessions` (the upstream's own), where the server's new ones land.
    /// - Throws: `HTTPDNSError` `.transport` when the socket cannot be made or the connect fails at once.
    init(
        context: DNSStubTLSContext, server: SocketAddress, serverName: String, sessions: DNSStubTLSSessions
    ) throws(HTTPDNSError) {
        let fd = socket(server.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Self.failure("socket") }
        // Queries are small frames written as they come: Nagle's delay would hold the second one
        // until the first is acknowledged.
        _ = httpdns_tls_set_nodelay(fd)
        let started = server.withSockAddr { connect(fd, $0, $1) }
        if started != 0, errno != EINPROGRESS {
            let failure = Self.failure("connect to \(server)")
            close(fd)
            throw failure
        }
        guard let ssl = httpdns_tls_client_new(context.context, fd, serverName) else {
            close(fd)
            throw HTTPDNSError(.transport, "TLS session cannot be made for \(serverName)")
        }
        httpdns_tls_use_session_slot(ssl, sessions.slot)
        self.fd = fd
        self.ssl = ssl
        self.sessions = sessions
        self.serverName = serverName
        phase = started == 0 ? .handshaking : .connecting
    }

    deinit {
        httpdns_tls_free(ssl)
        close(fd)
    }

    /// What to poll for.
    var events: Int16 {
        switch phase {
        case .connecting: Int16(POLLOUT)
        case .handshaking, .open: wantsWrite ? Int16(POLLIN | POLLOUT) : Int16(POLLIN)
        }
    }

    /// Queues framed messages to write at the next ``advance(readable:writable:)``.
    func send(_ frames: [UInt8]) {
        if outputStart == output.count {
            output = frames
            outputStart = 0
        } else {
            output += frames
        }
    }

    /// Moves the connection on as far as it goes without blocking: the connect's outcome, the
    /// handshake, the writes queued, and the reads when `readable`.
    /// - Returns: the DNS messages that arrived, whole.
    /// - Throws: `HTTPDNSError` `.transport` when the connection is over (refused, the handshake
    ///   failed, the certificate was not accepted, the server closed it).
    func advance(readable: Bool, writable: Bool) throws(HTTPDNSError) -> [[UInt8]] {
        if phase == .connecting {
            guard readable || writable else { return [] }
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else { throw Self.failure("connect", code) }
            phase = .handshaking
        }
        if phase == .handshaking {
            wantsWrite = false
            let size = error.count
            let result = httpdns_tls_handshake(ssl, &error, size)
            guard result == 1 else {
                try settle(result, "TLS handshake with \(serverName)")
                return []
            }
            phase = .open
        }
        try flush()
        return readable || writable ? try read() : []
    }

    private func flush() throws(HTTPDNSError) {
        wantsWrite = false
        while outputStart < output.count {
            let size = error.count
            let written = output[outputStart...].withUnsafeBytes { httpdns_tls_write(ssl, $0.baseAddress, $0.count, &error, size) }
            guard written > 0 else { return try settle(written, "TLS write") }
            outputStart += written
        }
    }

    private func read() throws(HTTPDNSError) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while true {
            let size = error.count
            let count = buffer.withUnsafeMutableBytes { httpdns_tls_read(ssl, $0.baseAddress, $0.count, &error, size) }
            guard count > 0 else {
                try settle(count, "TLS read")
                return messages
            }
            reader.append(buffer[0..<count])
            while let message = reader.nextMessage() { messages.append(message) }
        }
    }

    /// A step that did not finish: waiting for the socket is fine, anything else ends the connection.
    private func settle(_ result: Int, _ what: String) throws(HTTPDNSError) {
        switch result {
        case -2: return
        case -3: wantsWrite = true
        case 0: throw HTTPDNSError(.transport, "\(what): the server closed the connection")
        default: throw HTTPDNSError(.transport, "\(what): \(Self.text(error))")
        }
    }

    /// The C string in `characters`.
    static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func failure(_ what: String, _ code: Int32 = errno) -> HTTPDNSError {
        HTTPDNSError(.transport, "\(what): \(String(cString: strerror(code)))")
    }
}
