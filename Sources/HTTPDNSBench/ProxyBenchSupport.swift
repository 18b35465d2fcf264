import Foundation
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A proxy process row 9 talks to: `httpdns proxy` (the release binary next to this one) or
/// tinyproxy, with its port, credential and CPU time (its own and its children's threads).
final class ProxyDaemon: @unchecked Sendable {
    let name: String
    let port: UInt16
    /// The proxy URL (credential included) for curl and `https_proxy`.
    let url: String
    /// The `Proxy-Authorization` field line, or "" when none is needed.
    let authorization: String
    private let process: Process

    private init(name: String, process: Process, port: UInt16, url: String, authorization: String) {
        self.name = name
        self.process = process
        self.port = port
        self.url = url
        self.authorization = authorization
    }

    /// Starts `httpdns proxy` and reads the URL it prints first.
    static func httpdns(arguments: [String]) throws -> ProxyDaemon {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("httpdns")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw BenchFailure("\(executable.path) not found: build the httpdns product too (make bench does)")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["proxy"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = firstLine(output)
        guard let parsed = URL(string: text), let port = parsed.port, let user = parsed.user, let password = parsed.password else {
            process.terminate()
            throw BenchFailure("httpdns proxy printed no proxy URL: \(text)")
        }
        let token = Data("\(user):\(password)".utf8).base64EncodedString()
        return ProxyDaemon(
            name: "httpdns proxy", process: process, port: UInt16(port), url: text,
            authorization: "Proxy-Authorization: Basic \(token)\r\n")
    }

    /// Builds (`cc -O2`, from scripts/bench/connect-floor.c beside this source tree) and starts row
    /// 9d's floor: a CONNECT relay in C with `threads` epoll loops and nothing but the relaying.
    static func connectFloor(threads: Int, directory: URL) throws -> ProxyDaemon {
        let executable = try buildFloor("connect-floor", directory: directory, libraries: ["-lpthread"])
        let process = Process()
        process.executableURL = executable
        process.arguments = [String(threads)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = firstLine(output)
        guard text.hasPrefix("port "), let port = UInt16(text.dropFirst(5)) else {
            process.terminate()
            throw BenchFailure("the floor relay printed no port: \(text)")
        }
        return ProxyDaemon(name: "C floor relay", process: process, port: port, url: "http://127.0.0.1:\(port)", authorization: "")
    }

    /// Compiles `scripts/bench/NAME.c` (beside this source tree) with `cc -O2` into `directory`.
    static func buildFloor(_ name: String, directory: URL, libraries: [String]) throws -> URL {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/bench/\(name).c")
        guard FileManager.default.fileExists(atPath: source.path) else { throw BenchFailure("\(source.path) not found") }
        let executable = directory.appendingPathComponent(name)
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        compiler.arguments = ["-O2", "-o", executable.path, source.path] + libraries
        try compiler.run()
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { throw BenchFailure("cc could not build \(source.lastPathComponent)") }
        return executable
    }

    /// What a child printed on `output` up to its first newline (or its end), trimmed.
    static func firstLine(_ output: Pipe) -> String {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts Debian's tinyproxy in the foreground on a free port, allowing CONNECT to any port.
    static func tinyproxy(directory: URL) throws -> ProxyDaemon {
        let executable = "/usr/bin/tinyproxy"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchFailure("tinyproxy not found: install the Debian package tinyproxy")
        }
        let port = try freePort()
        let config = directory.appendingPathComponent("tinyproxy.conf")
        try """
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            MaxClients 256
            LogLevel Critical
            Allow 127.0.0.1
            DisableViaHeader Yes

            """.write(to: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-d", "-c", config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let daemon = ProxyDaemon(name: "tinyproxy", process: process, port: port, url: "http://127.0.0.1:\(port)", authorization: "")
        for _ in 0..<200 {
            if (try? ProxyBenchClient(port: port)) != nil { return daemon }
            usleep(20_000)
        }
        daemon.stop()
        throw BenchFailure("tinyproxy did not start listening on \(port)")
    }

    /// SIGTERM, then SIGKILL after 2 s (a child spawned from a dispatch thread may inherit a mask
    /// that blocks SIGTERM). No `waitUntilExit()`: Foundation's `Process` reaps one child at a time
    /// and was seen waiting on another child (nginx) forever.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<100 where process.isRunning { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// User and system CPU seconds of the process and its live children, from /proc.
    func cpuSeconds() -> Double {
        let pid = process.processIdentifier
        var ticks = ProcessStat(pid)?.cpuTicks ?? 0
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") {
            for entry in entries {
                guard let child = Int32(entry), child != pid, let stat = ProcessStat(child), stat.parent == pid else { continue }
                ticks += stat.cpuTicks
            }
        }
        return ProcessStat.seconds(ticks: ticks)
    }

    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BenchFailure("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// A blocking client connection to a proxy on 127.0.0.1 (run on threads of its own).
final class ProxyBenchClient {
    private let fd: Int32
    /// Bytes read after the CONNECT answer's head (none with these origins, which speak only when asked).
    private var leftover: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw BenchFailure("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(fd)
    }

    /// Sends `CONNECT target` and waits for a 2xx answer's head; bytes after it are kept for ``exchange(_:)``.
    func connect(_ target: String, authorization: String) throws {
        try send(Array("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\(authorization)\r\n".utf8))
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end: [UInt8] = [13, 10, 13, 10]
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw BenchFailure("the proxy closed during CONNECT") }
            head += buffer[0..<count]
            if let range = head.firstRange(of: end) {
                leftover = Array(head[range.upperBound...])
                head.removeSubrange(range.upperBound...)
                break
            }
            if head.count > 4096 { throw BenchFailure("CONNECT answer too long") }
        }
        let line = String(decoding: head.prefix(while: { $0 != 13 }), as: UTF8.self)
        guard line.split(separator: " ").dropFirst().first?.hasPrefix("2") == true else { throw BenchFailure("CONNECT refused: \(line)") }
    }

    /// Sends `request` through the tunnel and reads until the server closes.
    func exchange(_ request: [UInt8]) throws -> String {
        try send(request)
        var data = leftover
        leftover = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            data += buffer[0..<count]
        }
        return String(decoding: data, as: UTF8.self)
    }

    private func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw BenchFailure("send failed") }
    }
}
