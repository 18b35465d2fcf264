#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Runs the built `httpdns` binary for tests and collects what it printed.
///
/// Output goes to temporary files rather than pipes, so a chatty process can never block on a full
/// pipe while the test waits for it to exit. A process that outlives its time limit is killed and
/// reported as ``Failure`` (a hang is a failure, never a skipped test).
package struct ToolRunner: Sendable {
    /// What one run produced.
    package struct Result: Sendable {
        package var status: Int32
        package var stdout: Data
        package var stderr: Data

        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        package var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Non-empty stderr lines.
        package var stderrLines: [String] { stderrText.split(separator: "\n").map(String.init) }
        /// Non-empty stdout lines.
        package var stdoutLines: [String] { stdoutText.split(separator: "\n").map(String.init) }
    }

    /// Why the binary could not be run.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String

        package init(_ description: String) {
            self.description = description
        }
    }

    /// The binary.
    package let executable: URL

    /// Uses `executable`, or finds the built `httpdns` (see ``locate()``).
    package init(executable: URL? = nil) throws {
        self.executable = try executable ?? ToolRunner.locate()
    }

    /// Finds the `httpdns` binary: `$HTTPDNS_TOOL`, else next to the running test bundle (SwiftPM
    /// puts products and the test runner in one directory, whatever `--scratch-path` is).
    /// - Throws: ``Failure`` listing every place looked at.
    package static func locate() throws -> URL {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["HTTPDNS_TOOL"] { candidates.append(URL(fileURLWithPath: path)) }
        let runner = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        candidates.append(runner.appendingPathComponent("httpdns"))
        for bundle in [Bundle.main] + Bundle.allBundles {
            candidates.append(bundle.bundleURL.appendingPathComponent("httpdns"))
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("httpdns"))
        }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) {
            return found
        }
        throw Failure("the httpdns binary was not found (build it with `swift build --product httpdns`, or set HTTPDNS_TOOL); looked at: "
            + candidates.map(\.path).joined(separator: ", "))
    }

    /// Runs the binary with `arguments` and waits for it.
    /// - Throws: ``Failure`` when it cannot start or runs past `timeout` (it is then killed).
    package func run(_ arguments: [String], timeout: Duration = .seconds(60), environment: [String: String]? = nil) throws -> Result {
        let running = try start(arguments, environment: environment)
        defer { running.cleanUp() }
        let status = try running.wait(timeout: timeout)
        return Result(status: status, stdout: running.stdout, stderr: running.stderr)
    }

    /// Starts the binary without waiting (for `serve`). With `descriptorLimit`, it runs under that
    /// RLIMIT_NOFILE, soft and hard (set by /bin/sh, which then execs the binary in its place).
    package func start(_ arguments: [String], environment: [String: String]? = nil, descriptorLimit: Int? = nil) throws -> RunningTool {
        guard let descriptorLimit else {
            return try RunningTool(executable: executable, arguments: arguments, environment: environment)
        }
        return try RunningTool(
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", executable.path] + arguments,
            environment: environment)
    }
}

/// A started process (the `httpdns` binary, or `curl` in tests).
///
/// Spawned by ``Spawn`` (posix_spawn) and reaped with `waitpid` here rather than through Foundation's
/// `Process` (see ``Spawn`` for why).
package final class RunningTool: @unchecked Sendable {
    // @unchecked: the mutable exit status is only touched by the one test thread driving this value.
    private let pid: pid_t
    private let directory: URL
    private let stdoutPath: URL
    private let stderrPath: URL
    private let commandLine: String
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments`; stdin is /dev/null (or `stdin`, see ``Spawn``), stdout
    /// and stderr go to files.
    package init(executable: URL, arguments: [String], environment: [String: String]? = nil, stdin: String = "/dev/null") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutPath = directory.appendingPathComponent("stdout")
        stderrPath = directory.appendingPathComponent("stderr")
        commandLine = ([executable.lastPathComponent] + arguments).joined(separator: " ")

        do {
            pid = try Spawn.start(
                executable.path, arguments, environment: environment, stdin: stdin, stdout: stdoutPath.path, stderr: stderrPath.path)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw ToolRunner.Failure(error.description)
        }
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        cleanUp()
    }

    /// Runs a tool to its end (`h2load`, `nghttp`, `openssl`): its exit status and output, both streams.
    package static func runToEnd(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let tool = try RunningTool(executable: URL(fileURLWithPath: executable), arguments: arguments)
        let status = try tool.wait(timeout: .seconds(60))
        return (status, String(decoding: tool.stdout + tool.stderr, as: UTF8.self))
    }

    /// Everything written to stdout so far.
    package var stdout: Data { (try? Data(contentsOf: stdoutPath)) ?? Data() }
    /// Everything written to stderr so far.
    package var stderr: Data { (try? Data(contentsOf: stderrPath)) ?? Data() }
    package var processIdentifier: Int32 { pid }
    package var isRunning: Bool { poll() == nil }

    /// The CPU time (user and system) the process has used so far, from /proc.
    package func cpuSeconds() throws -> Double {
        guard let stat = ProcessStat(pid) else { throw ToolRunner.Failure("unreadable /proc/\(pid)/stat") }
        return stat.cpuSeconds
    }

    /// Opens `clients` idle connections to the process's listener on 127.0.0.1:`port` (more than
    /// its descriptors allow, under ``ToolRunner/start(_:environment:descriptorLimit:)``), lets it
    /// meet the limit, and measures the CPU it spends over the next `seconds`. The connections are
    /// returned open: they keep the listen queue full until released.
    package func cpuWhileBacklogged(port: Int, clients: Int = 120, seconds: Double = 1.5) throws -> (spent: Double, idle: [RawHTTPClient]) {
        var idle: [RawHTTPClient] = []
        for _ in 0..<clients { idle.append(try RawHTTPClient(port: port)) }
        Thread.sleep(forTimeInterval: 0.5)  // it accepts up to the limit and meets EMFILE
        let before = try cpuSeconds()
        Thread.sleep(forTimeInterval: seconds)
        return (try cpuSeconds() - before, idle)
    }

    /// Reaps the process if it has exited; its status (128 + signal when killed by one).
    private func poll() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        guard reaped == pid else { return nil }
        exitStatus = Spawn.exitStatus(status)
        return exitStatus
    }

    /// Waits until stdout holds a line starting with `prefix` and returns that line.
    /// - Throws: ``ToolRunner/Failure`` when the process exits first or `timeout` passes.
    package func waitForLine(startingWith prefix: String, timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let text = String(decoding: stdout, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if let status = poll() {
                throw ToolRunner.Failure("\(commandLine) exited (\(status)) before printing '\(prefix)': \(String(decoding: stderr, as: UTF8.self))")
            }
            usleep(20_000)
        }
        throw ToolRunner.Failure("no line starting with '\(prefix)' within \(timeout); stdout: \(String(decoding: stdout, as: UTF8.self))")
    }

    /// Sends `signal` to the process.
    package func send(_ signal: Int32) {
        if poll() == nil { kill(pid, signal) }
    }

    /// Waits for the process to exit and returns its status; kills it after `timeout`.
    /// - Throws: ``ToolRunner/Failure`` when it had to be killed.
    package func wait(timeout: Duration = .seconds(60)) throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = poll() { return status }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exitStatus = 128 + SIGKILL
        throw ToolRunner.Failure("\(commandLine) ran longer than \(timeout) and was killed; stderr: \(String(decoding: stderr, as: UTF8.self))")
    }

    /// Removes the output files.
    func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
    }
}
