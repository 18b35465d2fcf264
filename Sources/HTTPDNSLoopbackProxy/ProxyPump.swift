import CHTTPDNSProxy
import Foundation

/// Moves bytes one way between two non-blocking sockets, on the loop thread.
///
/// Bytes the proxy itself must send first (a `200 Connection established`, a rewritten request
/// head, bytes read together with the request head) go out from `pending`. Then a short tunnel's
/// bytes are copied through the loop's scratch buffer: `recv` and at once `send`, nothing kept
/// unless the destination is full. Once a direction has moved ``spliceThreshold`` bytes it takes a
/// pipe (from the loop's pool) and splices `source → pipe → destination` in the kernel
/// (`splice(2)`), so bulk bytes never enter user space; most tunnels (one request, one answer) end
/// before that and never pay for a pipe. Without a pipe (no descriptors left) it keeps copying. In
/// scanning mode it reads the upstream's response head through user space and hands it to
/// ``ProxyForwarding/scanResponse(_:)``.
///
/// Readiness is the connection's knowledge from edge-triggered events: ``sourceReadable`` and
/// ``destinationWritable`` are set by events and cleared when a call would block (or a read comes
/// back short while the peer has not closed: a later byte raises a new edge).
///
/// End of input is passed on as a half-close (`shutdown(SHUT_WR)`), so a client that closes its
/// sending side still gets the whole answer; when the connection closes right after this pump
/// finishes, the close sends it instead. The last bytes before an end already seen go out with
/// `MSG_MORE`, so that the end travels in the same segment.
struct ProxyPump {
    /// Bytes a direction moves by copying before it switches to a pipe and `splice(2)`.
    static let spliceThreshold: Int64 = 64 << 10

    let source: Int32
    let destination: Int32
    /// The source may have bytes (or its end) to read.
    var sourceReadable = false
    /// The source's peer closed its side (EPOLLRDHUP/HUP/ERR): read until the end, even after a short read.
    var sourceHungUp = false
    /// The destination may take bytes.
    var destinationWritable = true

    private var pipe: ProxyPipe?
    private var inPipe = 0
    /// Bytes spliced in per call: the pipe's capacity. Pipes start at the kernel's 64 KiB and grow to
    /// 1 MiB once a pump has moved 1 MiB, so bulk transfers take 16 times fewer wake-ups while the
    /// many short tunnels keep small pipes (the kernel limits pipe memory per user).
    private var chunk = 1 << 16
    private var triedGrowing = false
    /// Bytes to send before anything more is read (a prefix, or what the destination did not take).
    private(set) var pending: [UInt8]
    private var pendingOffset = 0
    /// Reading a response head to rewrite (forwarded requests), until the final one.
    private(set) var scanning: Bool
    private var scanned: [UInt8] = []

    /// The source reached its end (and it was passed on once ``finished``).
    private(set) var sourceEnded = false
    // The outcomes below are set by `run(loop:closing:)`; the connection's state machine reads them,
    // and its tests set them by hand to stand for a run.

    /// Everything was delivered and the end passed on (or left to the connection's close).
    var finished = false
    /// Why the pump stopped early (a reset, a broken pipe, a malformed response head).
    var failure: String?
    /// Set when the failure is a response head the proxy could not read (502 when nothing went out yet).
    var badResponse = false
    /// Bytes delivered to the destination.
    var moved: Int64 = 0

    /// Bytes read wait for a destination that takes no more: reading on would only fill memory.
    var waitsForDestination: Bool {
        !destinationWritable && !finished && failure == nil && (pendingOffset < pending.count || inPipe > 0)
    }

    /// Bytes were read that the destination has not taken yet (in `pending` or the pipe).
    var holdsBytes: Bool {
        pendingOffset < pending.count || inPipe > 0
    }

    /// - Parameters:
    ///   - prefix: bytes sent before anything read from `source`.
    ///   - scanResponse: read a response head first and rewrite it (forwarded requests).
    init(from source: Int32, to destination: Int32, prefix: [UInt8], scanResponse: Bool) {
        self.source = source
        self.destination = destination
        self.pending = prefix
        self.scanning = scanResponse
    }

    /// The pipe this pump took, if any, to give back to the loop when the tunnel ends: `empty` when
    /// it holds no bytes and was not grown, so that the loop's pool may keep it.
    var spentPipe: (pipe: ProxyPipe, empty: Bool)? {
        pipe.map { ($0, inPipe == 0 && !triedGrowing) }
    }

    /// Moves whatever can move now; returns whether any byte moved.
    ///
    /// - Parameter closing: the connection closes as soon as this pump finishes (the other
    ///   direction is over), so the end of input needs no shutdown of its own.
    mutating func run(loop: ProxyLoop, closing: Bool) -> Bool {
        var progress = false
        while !finished, failure == nil {
            if pendingOffset < pending.count {
                guard destinationWritable else { return progress }
                let more = sourceEnded && inPipe == 0 ? Int32(MSG_MORE) : 0
                let count = pending.withUnsafeBytes { bytes in
                    send(destination, bytes.baseAddress! + pendingOffset, bytes.count - pendingOffset, Int32(MSG_NOSIGNAL) | more)
                }
                if count > 0 {
                    pendingOffset += count
                    moved += Int64(count)
                    progress = true
                    continue
                }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN {
                    destinationWritable = false
                    return progress
                }
                failure = "write: " + ProxySocket.errorText(errno)
                return progress
            }
            if !pending.isEmpty {
                pending = []
                pendingOffset = 0
            }
            if inPipe > 0, let pipe {
                guard destinationWritable else { return progress }
                let count = httpdns_proxy_splice(pipe.read, destination, inPipe)
                if count > 0 {
                    inPipe -= count
                    moved += Int64(count)
                    progress = true
                    continue
                }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN {
                    destinationWritable = false
                    return progress
                }
                failure = "splice out: " + ProxySocket.errorText(errno)
                return progress
            }
            if sourceEnded {
                if !closing { Glibc.shutdown(destination, Int32(SHUT_WR)) }
                finished = true
                return progress
            }
            guard sourceReadable else { return progress }
            if pipe == nil, !scanning, moved >= Self.spliceThreshold {
                pipe = loop.takePipe()
            }
            if let pipe, !scanning {
                if !triedGrowing, moved >= 1 << 20 {
                    triedGrowing = true
                    let grown = httpdns_proxy_pipe_resize(pipe.write, 1 << 20)
                    if grown > 0 { chunk = Int(grown) }
                }
                // A short splice says nothing about the socket: a pipe slot holds one fragment,
                // so the pipe can fill before `chunk` bytes. Only EAGAIN ends the reading.
                let count = httpdns_proxy_splice(source, pipe.write, chunk)
                if count > 0 {
                    inPipe += count
                    progress = true
                    continue
                }
                if count == 0 {
                    sourceEnded = true
                    continue
                }
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    sourceReadable = false
                    return progress
                }
                failure = "splice in: " + ProxySocket.errorText(errno)
                return progress
            }
            if copy(loop.scratch) { progress = true }
        }
        return progress
    }

    /// Reads once into `scratch` and sends at once what was read; keeps what the destination does
    /// not take. Returns whether a byte was read.
    private mutating func copy(_ scratch: UnsafeMutableRawBufferPointer) -> Bool {
        let count = recv(source, scratch.baseAddress, scratch.count, 0)
        if count < 0 {
            if errno == EAGAIN {
                sourceReadable = false
            } else if errno != EINTR {
                failure = "read: " + ProxySocket.errorText(errno)
            }
            return false
        }
        guard count > 0 else {
            sourceEnded = true
            if scanning {
                failure = "the server closed before a whole response head"
                badResponse = true
            }
            return false
        }
        var length = count
        var ended = false
        if count < scratch.count {
            if sourceHungUp {
                // The peer closed its side: look for the end now, so that it can go with these bytes.
                let more = recv(source, scratch.baseAddress! + count, scratch.count - count, 0)
                if more > 0 {
                    length += more
                } else if more == 0 {
                    ended = true
                } else if errno == EAGAIN {
                    sourceReadable = false
                }
            } else {
                // Drained: bytes arriving later raise a new edge.
                sourceReadable = false
            }
        }
        let bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<length])
        if scanning {
            scanned += bytes
            scan()
            if ended {
                sourceEnded = true
                if scanning, failure == nil {
                    failure = "the server closed before a whole response head"
                    badResponse = true
                }
            }
            return true
        }
        sourceEnded = ended
        var sent = 0
        if destinationWritable {
            let more = sourceEnded ? Int32(MSG_MORE) : 0
            sent = send(destination, bytes.baseAddress, length, Int32(MSG_NOSIGNAL) | more)
            if sent < 0 {
                if errno != EAGAIN, errno != EINTR {
                    failure = "write: " + ProxySocket.errorText(errno)
                    return true
                }
                if errno == EAGAIN { destinationWritable = false }
                sent = 0
            }
            moved += Int64(sent)
        }
        if sent < length {
            pending = Array(bytes[sent...])
            pendingOffset = 0
        }
        return true
    }

    /// Consumes complete response heads from the scanned bytes.
    private mutating func scan() {
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

/// A pipe for `splice(2)`: its read and write ends.
struct ProxyPipe {
    var read: Int32
    var write: Int32
}
