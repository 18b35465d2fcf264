#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import DNSWire
import DNSZoneTransfer
import Foundation
import HTTPDNSCore

/// Zone transfers from a primary (AXFR, RFC 5936; IXFR, RFC 1995) over TCP, each on a thread of
/// ``BlockingPool/transfers`` (blocking socket calls never run on the cooperative pool), bounded by
/// a deadline for the whole transfer and stoppable between poll slices.
///
/// The protocol is ``DNSZoneTransfer``'s (the messages' checks, the IXFR forms, the size limits)
/// and, with a key, ``DNSTSIG``'s (the query signed, every response message of the stream checked,
/// RFC 8945 §5.3.1); this type only moves the bytes: connect, send the framed query, read framed
/// messages (RFC 1035 §4.2.2) until the transfer says it is done or has failed.
package struct DNSZoneTransferClient: Sendable {
    /// Why a transfer did not give a zone.
    package enum Failure: Error, Sendable, CustomStringConvertible {
        /// The connection: refused, reset, closed early, or the deadline.
        case transport(HTTPDNSError)
        /// The primary's answer broke a rule (its RCODE, a TSIG failure, a serial going backwards…).
        case transfer(DNSZoneTransferError)

        package var description: String {
            switch self {
            case .transport(let error): "transport: \(error.detail)"
            case .transfer(let error): "\(error)"
            }
        }
    }

    /// The primary.
    package var primary: SocketAddress
    /// The TSIG key transfers are signed with; nil: unsigned.
    package var key: DNSTSIGKey?
    /// The whole transfer's deadline, connect included. Default 30 s.
    package var timeout: Duration = .seconds(30)
    /// Seconds since 1970, for TSIG's Time Signed and its check. Default the system clock.
    package var now: @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970)) }

    package init(primary: SocketAddress, key: DNSTSIGKey? = nil) {
        self.primary = primary
        self.key = key
    }

    /// Runs `transfer` against the primary.
    ///
    /// - Returns: what ``DNSZoneTransfer`` made of the primary's answer (up to date, a full zone, or
    ///   the zone after the increments).
    /// - Throws: ``Failure``.
    package func run(_ transfer: DNSZoneTransfer) async throws(Failure) -> DNSZoneTransfer.Result {
        let client = self
        let deadline = ContinuousClock.now + timeout
        let outcome: Result<DNSZoneTransfer.Result, Failure>
        do {
            // The job's own failures travel as its value; the call's (timeout, cancellation, a full
            // queue) are thrown by it.
            outcome = try await BlockingCall<Result<DNSZoneTransfer.Result, Failure>>.run(
                on: .transfers, limit: .queue(timeout), timeoutDetail: "the transfer did not end in time"
            ) { call in
                do throws(Failure) {
                    return .success(.success(try client.perform(transfer, deadline: deadline, shouldStop: { call.isFinished })))
                } catch {
                    return .success(.failure(error))
                }
            }
        } catch let error as HTTPDNSError {
            throw .transport(error)
        } catch {
            throw .transport(HTTPDNSError(.transport, "\(error)"))
        }
        return try outcome.get()
    }

    /// The transfer on the calling (pool) thread.
    func perform(_ transfer: DNSZoneTransfer, deadline: ContinuousClock.Instant, shouldStop: () -> Bool) throws(Failure) -> DNSZoneTransfer.Result {
        var transfer = transfer
        var verifier: DNSTSIGStreamVerifier?
        let query: [UInt8]
        do {
            if let key {
                let signed = try DNSTSIG.sign(transfer.query, key: key, now: now())
                query = signed.bytes
                verifier = DNSTSIGStreamVerifier(key: key, requestMAC: signed.mac)
            } else {
                query = try transfer.query.encode()
            }
        } catch {
            throw .transport(HTTPDNSError(.invalidConfiguration, "cannot encode the transfer query: \(error)"))
        }
        func slice() throws(Failure) -> Int32 {
            if shouldStop() { throw .transport(HTTPDNSError(.cancelled, "the transfer was abandoned")) }
            let left = deadline - .now
            guard left > .zero else { throw .transport(HTTPDNSError(.timedOut, "the transfer did not end in time")) }
            return Int32(min(50, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
        }
        let fd: Int32
        do { fd = try PosixSocket.open(family: primary.family, type: PosixSocket.stream) } catch { throw .transport(error) }
        defer { close(fd) }
        do throws(HTTPDNSError) {
            if primary.withSockAddr({ connect(fd, $0, $1) }) != 0 {
                guard errno == EINPROGRESS || errno == EINTR else { throw PosixSocket.error("connect to \(primary)") }
                while try PosixSocket.wait(fd, for: Int16(POLLOUT), milliseconds: Self.unwrap(slice)) == 0 {}
                var socketError: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
                guard socketError == 0 else { throw PosixSocket.error("connect to \(primary)", socketError) }
            }
            let frame = DNSTCPFrameReader.frame(query)
            var written = 0
            while written < frame.count {
                let count = frame[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, PosixSocket.noSignal) }
                if count < 0 {
                    guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw PosixSocket.error("send") }
                    _ = try PosixSocket.wait(fd, for: Int16(POLLOUT), milliseconds: Self.unwrap(slice))
                    continue
                }
                written += count
            }
        } catch {
            throw .transport(error)
        }

        var reader = DNSTCPFrameReader()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let bytes = reader.nextMessage() {
                let received: DNSReceivedMessage
                do {
                    received = try DNSReceivedMessage(decoding: bytes)
                } catch {
                    throw .transfer(DNSZoneTransferError(.malformed, message: 0, "a response message does not decode: \(error)"))
                }
                var signature = DNSZoneTransfer.Signature.none
                if verifier != nil {
                    do throws(DNSTSIGError) {
                        signature = try verifier!.verify(received, now: now()) ? .signed : .unsigned
                    } catch {
                        signature = .rejected(error)
                    }
                }
                switch transfer.receive(received.message, wireSize: bytes.count + 2, signature: signature) {
                case .needMore: continue
                case .done(let result):
                    if verifier != nil {
                        do throws(DNSTSIGError) { try verifier!.finish() } catch {
                            throw .transfer(DNSZoneTransferError(.tsig, message: 0, "the stream's signatures: \(error)", tsigError: error))
                        }
                    }
                    return result
                case .failed(let failure): throw .transfer(failure)
                }
            }
            let count: Int
            do throws(HTTPDNSError) {
                guard try PosixSocket.wait(fd, for: Int16(POLLIN), milliseconds: Self.unwrap(slice)) != 0 else { continue }
                count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    throw PosixSocket.error("recv")
                }
            } catch {
                throw .transport(error)
            }
            if count == 0 {
                if case .failed(let failure) = transfer.streamEnded() { throw .transfer(failure) }
                throw .transport(HTTPDNSError(.transport, "the primary closed the connection"))
            }
            reader.append(buffer[0..<count])
        }
    }

    /// `slice`'s wait, its failure (only ever `.transport`) as the socket calls' error type.
    private static func unwrap(_ slice: () throws(Failure) -> Int32) throws(HTTPDNSError) -> Int32 {
        do { return try slice() } catch {
            switch error {
            case .transport(let error): throw error
            case .transfer(let failure): throw HTTPDNSError(.transport, "\(failure)")
            }
        }
    }
}
