import Foundation
import HTTPDNSCore
#if canImport(Glibc)
import Glibc
#endif

/// One server the bench runs as a child process, its output in a log file: started, waited for
/// until a TCP port accepts, stopped with SIGTERM (SIGKILL after 5 s).
final class BenchProcess: @unchecked Sendable {
    let name: String
    private let process = Process()
    let log: URL

    init(_ name: String, _ executable: String, _ arguments: [String], directory: URL) throws {
        self.name = name
        log = directory.appendingPathComponent("\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits until 127.0.0.1:`port` accepts a TCP connection; throws with the log's tail when the
    /// process exits first or 15 s pass.
    func waitForListener(_ port: UInt16) throws {
        let giveUp = Date().addingTimeInterval(15)
        while !BenchTCPSink.accepts(port: port) {
            guard process.isRunning else {
                throw BenchFailure("\(name) exited with \(process.terminationStatus): \(logTail)")
            }
            guard Date() < giveUp else { throw BenchFailure("\(name) did not listen on 127.0.0.1:\(port) within 15 s: \(logTail)") }
            usleep(50_000)
        }
    }

    var logTail: String {
        String(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(400))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let giveUp = Date().addingTimeInterval(5)
        while process.isRunning, Date() < giveUp { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
