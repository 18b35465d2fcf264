import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The machine a run happened on, and the process-memory figures rows 6 and 7 read.
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

    /// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), or nil when missing.
    static func statusBytes(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let number = line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            return number.map { $0 * 1024 }
        }
        return nil
    }

    /// Current resident set size in bytes.
    static func residentBytes() -> Int { statusBytes("VmRSS") ?? 0 }

    /// Resets the peak RSS (`VmHWM`) to the current RSS by writing 5 to `/proc/self/clear_refs`
    /// (Linux 4.0+). Returns false where that is not supported.
    static func resetPeakResident() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    /// Returns freed heap memory to the system so RSS deltas count live memory, not free lists.
    /// (`malloc_trim` is glibc-only and not in Swift's Glibc module: found with `dlsym`.)
    static func trimHeap() {
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
}
