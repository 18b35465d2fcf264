import CHTTPDNSProxy
import Foundation

/// Moves bytes one way between two non-blocking sockets, on the loop thread.
///
/// Bytes the proxy itself must send first (a `200 Connection established`, a rewritten request
/// head, bytes read together with the request head) go out from ``pending``; then the pump
/// splices `source → pipe → destination` in the kernel (`splice(2)`), so tunnelled bytes never
/// enter user space. Without a pipe (the process ran out of descriptors) it copies through a
/// buffer instead. In scanning mode it reads the upstream's response head through user space,
/// hands it to ``ProxyForwarding/scanResponse(_:)`` and splices the rest.
///
/// End of input is passed on as a half-close (`shutdown(SHUT_WR)`), so a client that closes its
/// sending side still gets the whole answer.
final class ProxyPump {
    let source: Int32
    let destination: Int32
    private var pipe: (read: Int32, write: Int32)?
    private var inPipe = 0
    /// Bytes spliced in per call: the pipe's capacity. Pipes start at the kernel's 64 KiB and grow to
    /// 1 MiB once a pump has moved 1 MiB, so bulk transfers take 16 times fewer wake-ups while the
    /// many short tunnels keep small pipes (the kernel limits pipe memory per user).
    private var chunk = 1 << 16
    private var triedGrowing = false
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var scanning: Bool
    private var scanned: [UInt8] = []

    /// The source reached its end (and it was passed on once ``finished``).
    private(set) var sourceEnded = false
    /// Everything was delivered and the destination half-closed.
    private(set) var finished = false
    /// Why the pump stopped early (a reset, a broken pipe, a malformed response head).
    private(set) var failure: String?
    /// Set when the failure is a response head the proxy could not read (502 when nothing went out yet).
    private(set) var badResponse = false
    /// The pump waits for the source to become readable.
    private(set) var wantsRead = false
    /// The pump waits for the destination to become writable.
    private(set) var wantsWrite = false
    /// Bytes delivered to the destination.
    private(set) var moved: Int64 = 0

    /// - Parameters:
    ///   - prefix: bytes sent before anything read from `source`.
    ///   - scanResponse: read a response head first and rewrite it (forwarded requests).
    init(from source: Int32, to destination: Int32, prefix: [UInt8], scanResponse: Bool) {
        self.source = source
        self.destination = destination
        self.pending = prefix
        self.scanning = scanResponse
        var fds: [Int32] = [-1, -1]
        if httpdns_proxy_pipe(&fds, 0) == 0 { pipe = (fds[0], fds[1]) }
    }

    deinit {
        if let pipe {
            close(pipe.read)
            close(pipe.write)
        }
    }

    /// Moves whatever can move now; returns whether any byte moved.
    func run(scratch: inout [UInt8]) -> Bool {
        var progress = false
        wantsRead = false
        wantsWrite = false
        while !finished, failure == nil {
            if pendingOffset < pending.count {
                let count = pending.withUnsafeBytes { bytes in
                    send(destination, bytes.baseAddress! + pendingOffset, bytes.count - pendingOffset, Int32(MSG_NOSIGNAL))
                }
                if count > 0 {
                    pendingOffset += count
                    moved += Int64(count)
                    progress = true
                    continue
                }
                if count < 0, errno == EAGAIN || errno == EINTR {
                    wantsWrite = errno == EAGAIN
                    if wantsWrite { return progress }
                    continue
                }
                failure = "write: " + ProxySocket.errorText(errno)
                return progress
            }
            if !pending.isEmpty {
                pending.removeAll(keepingCapacity: true)
                pendingOffset = 0
            }
            if inPipe > 0, let pipe {
                let count = httpdns_proxy_splice(pipe.read, destination, inPipe)
                if count > 0 {
                    inPipe -= count
                    moved += Int64(count)
                    progress = true
                    continue
                }
                if count < 0, errno == EAGAIN {
                    wantsWrite = true
                    return progress
                }
                if count < 0, errno == EINTR { continue }
                failure = "splice out: " + ProxySocket.errorText(errno)
                return progress
            }
            if sourceEnded {
                Glibc.shutdown(destination, Int32(SHUT_WR))
                finished = true
                return progress
            }
            if scanning || pipe == nil {
                let count = scratch.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    progress = true
                    if scanning {
                        scanned += scratch[0..<count]
                        scan()
                    } else {
                        pending = Array(scratch[0..<count])
                    }
                    continue
                }
                if count == 0 {
                    sourceEnded = true
                    if scanning {
                        failure = "the server closed before a whole response head"
                        badResponse = true
                    }
                    continue
                }
                if errno == EAGAIN {
                    wantsRead = true
                    return progress
                }
                if errno == EINTR { continue }
                failure = "read: " + ProxySocket.errorText(errno)
                return progress
            }
            if !triedGrowing, moved >= 1 << 20, let pipe {
                triedGrowing = true
                let grown = httpdns_proxy_pipe_resize(pipe.write, 1 << 20)
                if grown > 0 { chunk = Int(grown) }
            }
            let count = httpdns_proxy_splice(source, pipe!.write, chunk)
            if count > 0 {
                inPipe += count
                progress = true
                continue
            }
            if count == 0 {
                sourceEnded = true
                continue
            }
            if errno == EAGAIN {
                wantsRead = true
                return progress
            }
            if errno == EINTR { continue }
            failure = "splice in: " + ProxySocket.errorText(errno)
            return progress
        }
        return progress
    }

    /// Consumes complete response heads from the scanned bytes.
    private func scan() {
        while scanning {
            do {
                switch try ProxyForwarding.scanResponse(scanned[...]) {
                case .incomplete:
                    return
                case .head(let rewritten, let length, let final):
                    pending += rewritten
                    scanned.removeFirst(length)
                    if final {
                        scanning = false
                        pending += scanned
                        scanned = []
                    }
                }
            } catch {
                failure = "bad response from the server: \(error.detail)"
                badResponse = true
                return
            }
        }
    }
}
