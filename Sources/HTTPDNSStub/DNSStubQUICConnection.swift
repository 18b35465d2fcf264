#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CQUIC
import DNSSockets
import Foundation
import HTTPDNSCore

/// The certificates a DNS-over-QUIC upstream trusts (GnuTLS credentials), loaded once and shared by
/// its connections.
final class DNSStubQUICTrust: @unchecked Sendable {
    // Unchecked: the credentials are only read once made (GnuTLS allows sharing them between
    // sessions on any thread).
    let trust: OpaquePointer

    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when the trust cannot be loaded.
    init(_ trust: HTTPDNSTrust) throws(HTTPDNSError) {
        var error = [CChar](repeating: 0, count: 256)
        let size = error.count
        let made: OpaquePointer?
        switch trust {
        case .system:
            made = httpdns_quic_client_trust_new(nil, nil, 0, &error, size)
        case .caFile(let path):
            made = httpdns_quic_client_trust_new(path, nil, 0, &error, size)
        case .caPEM(let pem):
            made = pem.withUnsafeBytes { bytes in
                httpdns_quic_client_trust_new(nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, &error, size)
            }
        }
        guard let made else {
            throw HTTPDNSError(.invalidConfiguration, "QUIC trust cannot be loaded: \(DNSStubTLSConnection.text(error))")
        }
        self.trust = made
    }

    deinit {
        httpdns_quic_client_trust_free(trust)
    }
}

/// One QUIC connection of a DNS-over-QUIC upstream (RFC 9250), owned by one thread (never shared):
/// the C client in `CQUIC` (ngtcp2 with GnuTLS) does the QUIC, each query on a stream of its own.
/// Nothing here blocks: the owner polls ``fd`` until ``timeout`` and calls ``advance(readable:)``.
final class DNSStubQUICConnection {
    /// What became of one query.
    struct Outcome {
        /// The tag given to ``send(_:tag:)``.
        var tag: UInt64
        /// The answer as it arrived (ID 0), or nil when its stream failed (reset by the server,
        /// ended without a whole answer, longer than a DNS message).
        var answer: [UInt8]?
    }

    private let client: OpaquePointer
    private let serverName: String
    private var buffer = [UInt8](repeating: 0, count: 65_535)
    /// The handshake was done at some point (a later failure is a loss, not a refusal).
    private(set) var wasOpen = false

    /// Starts a connection to `server` verifying `serverName` (also the SNI); it closes itself after
    /// `idleTimeout` without traffic. `session`, from an earlier connection's ``takeSession()``, is
    /// offered for TLS 1.3 resumption (a full handshake when the server declines it). The first
    /// ``advance(readable:)`` sends its first packet.
    /// - Throws: `HTTPDNSError` `.transport` when the socket or the QUIC state cannot be made.
    init(trust: DNSStubQUICTrust, server: SocketAddress, serverName: String, idleTimeout: Duration, session: [UInt8]? = nil) throws(HTTPDNSError) {
        var error = [CChar](repeating: 0, count: 256)
        let size = error.count
        let milliseconds = UInt64(max(1, idleTimeout.inSeconds * 1000))
        let made = server.withSockAddr { address, length in
            httpdns_quic_client_new(trust.trust, address, length, serverName, milliseconds, &error, size)
        }
        guard let made else {
            throw HTTPDNSError(.transport, "QUIC connection to \(server): \(DNSStubTLSConnection.text(error))")
        }
        client = made
        self.serverName = serverName
        if let session { _ = session.withUnsafeBufferPointer { httpdns_quic_client_resume(made, $0.baseAddress, $0.count) } }
    }

    deinit {
        httpdns_quic_client_free(client)
    }

    /// The UDP socket to poll for reading.
    var fd: Int32 { httpdns_quic_client_fd(client) }

    /// How long the poll may last at most: the connection's next timer (milliseconds).
    var timeoutMilliseconds: Int32 { httpdns_quic_client_timeout_ms(client) }

    /// The handshake is done and the connection is up.
    var isOpen: Bool { httpdns_quic_client_is_open(client) != 0 }

    /// The handshake resumed an earlier session.
    var isResumed: Bool { httpdns_quic_client_is_resumed(client) != 0 }

    /// The session of the newest ticket the server sent since the last call, for the next
    /// connection to resume; nil when none came.
    func takeSession() -> [UInt8]? {
        let capacity = buffer.count
        let length = buffer.withUnsafeMutableBytes { httpdns_quic_client_take_session(client, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), capacity) }
        return length > 0 ? Array(buffer[0..<length]) : nil
    }

    /// Queries queued or in flight.
    var pending: Int { httpdns_quic_client_pending(client) }

    /// Queues `message` (a whole DNS message; its ID goes out as 0) on a stream of its own.
    /// - Returns: false when it cannot be queued (its length, a connection that is over).
    @discardableResult
    func send(_ message: ArraySlice<UInt8>, tag: UInt64) -> Bool {
        message.withUnsafeBytes { bytes in
            httpdns_quic_client_send(client, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, tag) == 0
        }
    }

    /// The tag of the stream last sent for each query ID: a stream's outcome counts only when its
    /// tag is still its ID's (a cancelled query's ID may be given to the next one).
    private var currentTags: [UInt16: UInt64] = [:]
    private var sends: UInt64 = 0

    /// Queues each message of `frames` (DNS messages each with its 2-byte length, as
    /// ``DNSStubPipeline`` gives them) on a stream tagged with its ID and a count of its own.
    func send(frames: [UInt8]) {
        var start = 0
        while start + 2 <= frames.count {
            let length = Int(frames[start]) << 8 | Int(frames[start + 1])
            let end = start + 2 + length
            guard length >= 12, end <= frames.count else { return }
            let id = UInt16(frames[start + 2]) << 8 | UInt16(frames[start + 3])
            sends &+= 1
            let tag = sends << 16 | UInt64(id)
            currentTags[id] = tag
            send(frames[(start + 2)..<end], tag: tag)
            start = end
        }
    }

    /// The query ID of the stream `tag`, when that stream is still the one its ID was last sent on
    /// (and forgets it: a stream has one outcome).
    func queryID(ofStream tag: UInt64) -> UInt16? {
        let id = UInt16(truncatingIfNeeded: tag)
        guard currentTags[id] == tag else { return nil }
        currentTags[id] = nil
        return id
    }

    /// Gives up the query `tag` (its stream is reset).
    func cancel(tag: UInt64) {
        _ = httpdns_quic_client_cancel(client, tag)
    }

    /// Why the connection is over (refused, the handshake or the certificate failed, closed by the
    /// server or idle), once ``advance(readable:)`` found it so; the queries it held are lost.
    private(set) var failure: HTTPDNSError?

    /// Moves the connection on (reads when `readable`, runs its timers, writes); afterwards
    /// ``failure`` says whether the connection is over.
    /// - Returns: the queries answered or failed since the last call (even when it is over now).
    func advance(readable: Bool) -> [Outcome] {
        guard failure == nil else { return [] }
        let result = httpdns_quic_client_advance(client, readable ? 1 : 0)
        if httpdns_quic_client_is_open(client) != 0 { wasOpen = true }
        var outcomes: [Outcome] = []
        var tag: UInt64 = 0
        while true {
            let capacity = buffer.count
            let length = buffer.withUnsafeMutableBytes { httpdns_quic_client_take(client, &tag, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), capacity) }
            if length == -1 { break }
            outcomes.append(Outcome(tag: tag, answer: length >= 0 ? Array(buffer[0..<length]) : nil))
        }
        if result != 0 {
            let reason = String(cString: httpdns_quic_client_error(client))
            failure = HTTPDNSError(.transport, wasOpen ? "QUIC connection: \(reason)" : "QUIC handshake with \(serverName): \(reason)")
        }
        return outcomes
    }
}
