import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One `httpdns serve` process for row 10, listening plain and TLS on 127.0.0.1 (one process, so
/// that its CPU time covers whatever it does besides answering: the health probes included).
final class BenchServeProcess: @unchecked Sendable {
    let name: String
    private let process: Process
    private let log: URL
    private let plainPort: UInt16
    private let tlsPort: UInt16

    init(name: String, httpdns: String, arguments: [String], directory: URL, certificatePath: String, keyPath: String) throws {
        self.name = name
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        plainPort = try Dnsmasq.freePort(on: loopback)
        tlsPort = try Dnsmasq.freePort(on: loopback)
        log = directory.appendingPathComponent("serve-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process = Process()
        process.executableURL = URL(fileURLWithPath: httpdns)
        process.arguments = ["serve", "--listen", "127.0.0.1:\(plainPort)", "--listen", "https://127.0.0.1:\(tlsPort)",
                             "--tls-cert", certificatePath, "--tls-key", keyPath] + arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let giveUp = Date().addingTimeInterval(15)
        while !BenchTCPSink.accepts(port: plainPort) || !BenchTCPSink.accepts(port: tlsPort) {
            guard process.isRunning else {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw BenchFailure("httpdns serve (\(name)) exited with \(process.terminationStatus): \(text.suffix(400))")
            }
            guard Date() < giveUp else {
                stop()
                throw BenchFailure("httpdns serve (\(name)) did not listen within 15 s")
            }
            usleep(50_000)
        }
    }

    func target(tls: Bool) -> BenchServerPair.Target {
        BenchServerPair.Target(
            name: "httpdns serve (\(name))", url: "\(tls ? "https" : "http")://127.0.0.1:\(tls ? tlsPort : plainPort)",
            pid: process.processIdentifier)
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let giveUp = Date().addingTimeInterval(5)
        while process.isRunning, Date() < giveUp { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// Listeners on loopback addresses, one port, that accept each connection and close it at once:
/// the origins row 10's TCP checks find up. One thread polls them all.
final class BenchTCPSink: @unchecked Sendable {
    let port: Int
    private let descriptors: [Int32]
    private let stopping = HTTPDNSLock(false)
    private let done = DispatchSemaphore(value: 0)

    init(addresses: [HTTPDNSIPAddress]) throws {
        var descriptors: [Int32] = []
        var port: UInt16 = 0
        for address in addresses {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw BenchFailure("socket: \(String(cString: strerror(errno)))") }
            var yes: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            let bytes = address.bytes
            socketAddress.sin_addr.s_addr = (UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])).bigEndian
            let bound = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(descriptor, 128) == 0 else {
                close(descriptor)
                descriptors.forEach { close($0) }
                throw BenchFailure("cannot listen on \(address):\(port): \(String(cString: strerror(errno)))")
            }
            if port == 0 {
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = withUnsafeMutablePointer(to: &socketAddress) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
                }
                port = UInt16(bigEndian: socketAddress.sin_port)
            }
            descriptors.append(descriptor)
        }
        self.port = Int(port)
        self.descriptors = descriptors
        let thread = Thread { [self] in self.serve() }
        thread.start()
    }

    private func serve() {
        var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while !stopping.withLock({ $0 }) {
            guard poll(&polled, nfds_t(polled.count), 100) > 0 else { continue }
            for entry in polled where entry.revents != 0 {
                let client = accept(entry.fd, nil, nil)
                if client >= 0 { close(client) }
            }
        }
        done.signal()
    }

    func stop() {
        let first = stopping.withLock { stopping -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        done.wait()
        descriptors.forEach { close($0) }
    }

    /// Whether 127.0.0.1:`port` accepts a TCP connection.
    static func accepts(port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
