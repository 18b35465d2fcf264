import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The machine a run happened on. (The process-memory figures rows 6 and 7 read are
/// `HTTPDNSTestSupport`'s `ProcessMemory`, shared with the tests.)
enum BenchSystem {
    /// What the table is printed with: cores, CPU model, Swift version, load.
    struct Machine: Sendable, Encodable {
        var cores: Int
        var cpuModel: String
        var swiftVersion: String
        var kernel: String
        /// `/proc/loadavg` before the first row.
        var loadBefore: String
        /// `/proc/loadavg` after the last row.
        var loadAfter: String = ""
    }

    static func machine() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model, swiftVersion: swiftVersion(),
            kernel: release, loadBefore: loadAverage())
    }

    /// The first three fields of `/proc/loadavg` (1, 5 and 15 minutes).
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// `swift --version`'s first line when the toolchain is on PATH (the bench is built with it).
    private static func swiftVersion() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "unknown" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.contains("Swift version") }
        return line.map(String.init) ?? "unknown"
    }
}
