import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs each row in a child process of its own (`httpdns-bench --row-child N`).
///
/// Why: memory rows (6, 7) then start from a fresh heap instead of whatever earlier rows left; a row
/// that crashes (row 4 can, see the report) costs only its own figures; and everything a row leaves
/// behind is cleaned up. The child gets a private `TMPDIR`; after it exits, any nginx started from
/// that directory is ended by its pid (only if its command line names that directory) and the
/// directory is removed.
enum BenchChild {
    /// How long one row may take before the child is killed.
    static let rowTimeout: Double = 900

    /// Runs `row` in a child; returns its rows or throws why it produced none.
    static func run(row: Int, options: BenchOptions) throws -> [BenchRow] {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw BenchFailure("cannot find this executable (/proc/self/exe)")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-bench-\(getpid())-row\(row)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { cleanUp(scratch) }
        let output = scratch.appendingPathComponent("rows.json")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--row-child", String(row), "--child-output", output.path] + (options.quick ? ["--quick"] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = scratch.path
        process.environment = environment
        try process.run()
        let giveUp = Date().addingTimeInterval(options.quick ? rowTimeout / 3 : rowTimeout)
        while process.isRunning, Date() < giveUp { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw BenchFailure("row \(row) did not finish within \(Int(rowTimeout)) s and was killed")
        }
        if process.terminationReason == .uncaughtSignal {
            throw BenchFailure("row \(row) crashed (signal \(process.terminationStatus)); its backtrace is on stderr above")
        }
        let data = try? Data(contentsOf: output)
        guard let data, let result = try? JSONDecoder().decode(ChildResult.self, from: data) else {
            throw BenchFailure("row \(row) exited with status \(process.terminationStatus) without results")
        }
        if let failure = result.failure { throw BenchFailure(failure) }
        return result.rows
    }

    /// What a child writes for the parent.
    struct ChildResult: Codable {
        var rows: [BenchRow]
        var failure: String?
    }

    /// The child side: writes the row's figures, or why it failed, to `path`.
    static func write(rows: [BenchRow], failure: String?, to path: String) {
        let data = (try? JSONEncoder().encode(ChildResult(rows: rows, failure: failure))) ?? Data()
        try? data.write(to: URL(fileURLWithPath: path))
    }

    /// Ends nginx processes started from inside `scratch` (left over when a child crashed), then
    /// removes `scratch`.
    static func cleanUp(_ scratch: URL) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
        for entry in entries where entry.hasPrefix("httpdns-nginx-") {
            let directory = scratch.appendingPathComponent(entry)
            guard let text = try? String(contentsOf: directory.appendingPathComponent("nginx.pid"), encoding: .utf8),
                  let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1,
                  let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                  String(decoding: command, as: UTF8.self).contains(directory.path)
            else { continue }
            kill(pid, SIGTERM)
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: scratch)
    }
}
