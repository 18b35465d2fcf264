#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNSCore

/// A real dnsmasq (Debian `dnsmasq-base`) on a loopback address and a free port, for tests.
///
/// It serves only what the configuration says: no upstream servers, no `/etc/hosts`, so a name it
/// does not know gets REFUSED (or NXDOMAIN under ``Configuration/localDomains``) and no query ever
/// leaves the machine. ``Configuration/addresses`` turns it into a *lying* resolver that points any
/// name at a chosen address. The process is stopped by ``stop()`` or when the value is released.
package final class Dnsmasq: Sendable {
    /// What dnsmasq should serve; each field maps to one dnsmasq option.
    package struct Configuration: Sendable {
        /// Address to listen on; keep it loopback. Default 127.0.0.1.
        package var listenAddress: HTTPDNSIPAddress = HTTPDNSIPAddress("127.0.0.1")!
        /// UDP and TCP port; `nil` (default) picks a free one.
        package var port: UInt16?
        /// TTL of local answers (`local-ttl`). Default 300 s.
        package var ttl: UInt32 = 300
        /// Domains answered only from local data (`local=/d/`): unknown names under them get NXDOMAIN
        /// instead of REFUSED. Default none.
        package var localDomains: [String] = []
        /// `address=/name/ip`: the name *and every subdomain* resolve to the address (the lying mode).
        package var addresses: [(name: String, address: HTTPDNSIPAddress)] = []
        /// `host-record=name,ip…`: exact-name A/AAAA records (also answer PTR).
        package var hostRecords: [(name: String, addresses: [HTTPDNSIPAddress])] = []
        /// `cname=alias,target`: the target must be a name dnsmasq knows locally.
        package var cnames: [(alias: String, target: String)] = []
        /// `txt-record=name,"string"…` (each string ≤ 255 bytes; several strings make big answers).
        package var txtRecords: [(name: String, strings: [String])] = []
        /// Serve this zone authoritatively (`auth-zone`, `auth-server`): NXDOMAIN answers carry the
        /// zone's SOA. In this mode the listen address answers only for the zone (others REFUSED),
        /// and the listen address must be an interface address (127.0.0.1). Default `nil`.
        package var authoritativeZone: String?
        /// TTL and SOA minimum in the authoritative zone (`auth-ttl`). Default 900 s.
        package var authoritativeTTL: UInt32 = 900
        /// More lines for the config file, dnsmasq long options without `--` (`"log-queries"`).
        package var extraOptions: [String] = []
        /// Where dnsmasq lives. Default `/usr/sbin/dnsmasq`.
        package var executable: String = "/usr/sbin/dnsmasq"
        /// How long to wait for the first answer. Default 10 s.
        package var startTimeout: Duration = .seconds(10)

        package init() {}

        /// Makes `name` and its subdomains resolve to `address`.
        package mutating func lie(_ name: String, to address: HTTPDNSIPAddress) {
            addresses.append((name, address))
        }
    }

    /// Why dnsmasq could not be used.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String

        package init(description: String) {
            self.description = description
        }
    }

    /// The address dnsmasq listens on.
    package let address: HTTPDNSIPAddress
    /// The UDP and TCP port dnsmasq listens on.
    package let port: UInt16
    /// The temporary directory with the config file and dnsmasq's log.
    package let directory: URL

    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts dnsmasq and waits until it answers a query.
    ///
    /// - Throws: ``Failure`` when dnsmasq is not installed (naming the apt package), exits at
    ///   start (with its log), or does not answer within ``Configuration/startTimeout``.
    package init(_ configuration: Configuration = Configuration()) throws {
        guard FileManager.default.isExecutableFile(atPath: configuration.executable) else {
            throw Failure(description: "dnsmasq not found at \(configuration.executable): install the Debian package dnsmasq-base (apt-get install dnsmasq-base)")
        }
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-dnsmasq-\(UUID().uuidString)")
        directory = workDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        address = configuration.listenAddress
        do {
            let started = try Dnsmasq.onFreePort(configuration.listenAddress, fixed: configuration.port) { port in
                try Dnsmasq.launch(configuration, port: port, directory: workDirectory)
            }
            self.port = started.port
            self.process = HTTPDNSLock(started.value)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops dnsmasq (SIGTERM, then waits for it) and removes its files. Safe to call twice.
    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// What dnsmasq has logged so far (start-up lines, errors; queries with `log-queries`).
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("dnsmasq.log"), encoding: .utf8)) ?? ""
    }
}

extension Dnsmasq {
    /// The config file for `configuration`, one dnsmasq long option per line.
    static func configFile(_ configuration: Configuration, port: UInt16) -> String {
        var lines = [
            "no-resolv", "no-hosts", "no-poll", "bind-interfaces", "pid-file=", "log-facility=-",
            "listen-address=\(configuration.listenAddress)", "port=\(port)", "local-ttl=\(configuration.ttl)",
        ]
        if geteuid() == 0 { lines += ["user=root", "group=root"] }
        lines += configuration.localDomains.map { "local=/\($0)/" }
        lines += configuration.addresses.map { "address=/\($0.name)/\($0.address)" }
        lines += configuration.hostRecords.map { "host-record=\(([$0.name] + $0.addresses.map(\.description)).joined(separator: ","))" }
        lines += configuration.cnames.map { "cname=\($0.alias),\($0.target)" }
        lines += configuration.txtRecords.map { record in
            let quoted = record.strings.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            return "txt-record=\(([record.name] + quoted).joined(separator: ","))"
        }
        if let zone = configuration.authoritativeZone {
            lines += [
                "auth-server=ns.\(zone),\(configuration.listenAddress)", "auth-zone=\(zone)",
                "auth-soa=2024010101,hostmaster.\(zone),1200,180,1209600", "auth-ttl=\(configuration.authoritativeTTL)",
            ]
        }
        lines += configuration.extraOptions
        return lines.joined(separator: "\n") + "\n"
    }

    static func launch(_ configuration: Configuration, port: UInt16, directory: URL) throws -> ChildProcess {
        let configPath = directory.appendingPathComponent("dnsmasq.conf")
        try configFile(configuration, port: port).write(to: configPath, atomically: true, encoding: .utf8)
        let logPath = directory.appendingPathComponent("dnsmasq.log")
        // ChildProcess spawns with no signals blocked (async callers run on libdispatch threads that
        // block SIGTERM, and dnsmasq would inherit that) and falls back to SIGKILL in stop().
        let process = try ChildProcess(
            executable: configuration.executable, arguments: ["--keep-in-foreground", "--conf-file=\(configPath.path)"],
            output: logPath, stopTimeout: .seconds(5))

        let deadline = ContinuousClock.now + configuration.startTimeout
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                process.stop(timeout: nil)
                let text = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
                throw Failure(description: "dnsmasq exited at start: \(text)")
            }
            if answers(configuration.listenAddress, port: port) { return process }
        }
        process.stop(timeout: nil)
        throw Failure(description: "dnsmasq on \(configuration.listenAddress.uriText):\(port) did not answer within \(configuration.startTimeout)")
    }

    /// Sends a query for `. SOA` over UDP and waits up to 200 ms for any reply (REFUSED counts).
    static func answers(_ address: HTTPDNSIPAddress, port: UInt16) -> Bool {
        let query: [UInt8] = [0xD5, 0x5A, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1]
        let fd = socket(address.family == .v4 ? AF_INET : AF_INET6, socketType(datagram: true), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard withSockAddr(address, port, { connect(fd, $0, $1) }) == 0,
              query.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == query.count else {
            usleep(100_000)
            return false
        }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 200) == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { usleep(100_000) }  // ECONNREFUSED: not bound yet
        return count >= 12 && buffer[0] == 0xD5 && buffer[1] == 0x5A
    }

    /// Starts a server on a port free on `address`: a port found free can be taken by another
    /// process before the server binds it, so `launch` is tried with up to `attempts` ports (or
    /// once with `fixed`); the last failure is thrown.
    package static func onFreePort<Value>(
        _ address: HTTPDNSIPAddress = HTTPDNSIPAddress("127.0.0.1")!, fixed: UInt16? = nil, attempts: Int = 5,
        _ launch: (UInt16) throws -> Value
    ) throws -> (port: UInt16, value: Value) {
        var lastError: (any Error)?
        for _ in 0..<(fixed == nil ? attempts : 1) {
            do {
                let port = try fixed ?? freePort(on: address)
                return (port, try launch(port))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? ToolRunner.Failure("no free port on \(address)")
    }

    /// A port that is free for both UDP and TCP on `address` right now (bind to port 0, check TCP).
    package static func freePort(on address: HTTPDNSIPAddress) throws -> UInt16 {
        for _ in 0..<20 {
            let udp = socket(address.family == .v4 ? AF_INET : AF_INET6, socketType(datagram: true), 0)
            guard udp >= 0 else { break }
            defer { close(udp) }
            guard withSockAddr(address, 0, { bind(udp, $0, $1) }) == 0 else { break }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(udp, $0, &length) }
            }
            let port = withUnsafeBytes(of: &storage) { raw -> UInt16 in
                // sin_port and sin6_port sit at the same offset, right after the family.
                UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            }
            let tcp = socket(address.family == .v4 ? AF_INET : AF_INET6, socketType(datagram: false), 0)
            guard tcp >= 0 else { break }
            defer { close(tcp) }
            var one: Int32 = 1
            setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if withSockAddr(address, port, { bind(tcp, $0, $1) }) == 0 { return port }
        }
        throw Failure(description: "no free UDP+TCP port on \(address)")
    }

    static func socketType(datagram: Bool) -> Int32 {
        #if os(Linux)
        Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)
        #else
        datagram ? SOCK_DGRAM : SOCK_STREAM
        #endif
    }

    package static func withSockAddr<R>(_ address: HTTPDNSIPAddress, _ port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        if address.family == .v4 {
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: address.bytes) }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var storage = sockaddr_in6()
        storage.sin6_family = sa_family_t(AF_INET6)
        storage.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: address.bytes) }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }
}
