import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One server the bench runs as a child process: started, waited for until a TCP port accepts,
/// stopped with SIGTERM (SIGKILL after 5 s).
///
/// Spawned as the tests spawn servers (``RunningTool``, posix_spawn), not with Foundation's
/// `Process`: dnsmasq closes the descriptors it inherits, Foundation then takes it for exited and
/// blocks its child-watching thread in `waitpid` on it, and no later `Process` (dnsperf) is ever
/// seen to exit (observed: row 11 hung with dnsperf a zombie).
final class BenchProcess: @unchecked Sendable {
    let name: String
    private let process: RunningTool

    init(_ name: String, _ executable: String, _ arguments: [String]) throws {
        self.name = name
        process = try RunningTool(executable: URL(fileURLWithPath: executable), arguments: arguments)
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits until 127.0.0.1:`port` accepts a TCP connection; throws with the log's tail when the
    /// process exits first or 15 s pass.
    func waitForListener(_ port: UInt16) throws {
        let giveUp = Date().addingTimeInterval(15)
        while !BenchTCPSink.accepts(port: port) {
            guard process.isRunning else {
                throw BenchFailure("\(name) exited: \(logTail)")
            }
            guard Date() < giveUp else { throw BenchFailure("\(name) did not listen on 127.0.0.1:\(port) within 15 s: \(logTail)") }
            usleep(50_000)
        }
    }

    /// The end of what it wrote (stdout, then stderr).
    var logTail: String {
        String(String(decoding: process.stdout + process.stderr, as: UTF8.self).suffix(400))
    }

    func stop() {
        guard process.isRunning else { return }
        process.send(SIGTERM)
        _ = try? process.wait(timeout: .seconds(5))  // SIGKILL after that
    }
}
