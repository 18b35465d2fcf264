#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNSCore

/// Writes to stdout and stderr without buffering in between, so results, errors and `-v` lines come
/// out in the order they happen even when both streams go to one terminal or file.
///
/// Write errors (a closed pipe: `httpdns fetch URL | head -c 10`) are reported to the caller instead
/// of killing the process; SIGPIPE is ignored at start-up.
enum Output {
    /// Writes raw bytes to stdout.
    /// - Throws: ``ToolFailure`` when stdout is closed or full.
    static func stdout(_ data: Data) throws(ToolFailure) {
        try write(fd: 1, data)
    }

    /// Writes a line (a newline is added) to stdout.
    static func line(_ text: String) throws(ToolFailure) {
        try write(fd: 1, Data((text + "\n").utf8))
    }

    /// Writes a line to stderr; failures are ignored (there is nowhere left to report them).
    static func diagnostic(_ text: String) {
        try? write(fd: 2, Data((text + "\n").utf8))
    }

    /// Writes text to stderr without a newline (progress bar redraws).
    static func stderrRaw(_ text: String) {
        try? write(fd: 2, Data(text.utf8))
    }

    /// `httpdns: error: …`, the one line a failing command prints. Newlines inside `message` are
    /// flattened so that the promise of one line holds for any error text.
    static func error(_ message: String) {
        let flat = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        diagnostic("httpdns: error: \(flat)")
    }

    /// A usage error: the message, then a hint to the command's help.
    static func usage(_ error: UsageError) {
        Output.error(error.message)
        diagnostic("Run '\(error.command) --help' for usage.")
    }

    /// Whether stderr is a terminal (for the progress bar).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Whether stdout is a terminal.
    static var stdoutIsTerminal: Bool { isatty(1) == 1 }

    static func write(fd: Int32, _ data: Data, name: String? = nil) throws(ToolFailure) {
        let failed: Int32? = data.withUnsafeBytes { raw -> Int32? in
            guard var pointer = raw.baseAddress else { return nil }
            var left = raw.count
            while left > 0 {
                let written = posixWrite(fd, pointer, left)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                left -= written
                pointer += written
            }
            return nil
        }
        if let failed {
            let target = name ?? (fd == 1 ? "stdout" : fd == 2 ? "stderr" : "file")
            throw ToolFailure("cannot write to \(target): \(String(cString: strerror(failed)))")
        }
    }
}

/// `write(2)`, named apart from ``Output/write(fd:_:)``.
private func posixWrite(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, pointer, count)
    #else
    Darwin.write(fd, pointer, count)
    #endif
}

/// A failure that ends a command with exit status 1 and one `httpdns: error:` line.
struct ToolFailure: Error, Sendable, CustomStringConvertible {
    /// The line printed after `httpdns: error: `.
    var message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}

/// Exit statuses of the tool (the BSD `sysexits` value for usage, as swift-argument-parser uses).
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    /// `check` found hijacking or blocking.
    static let hijacked: Int32 = 2
    /// `EX_USAGE`.
    static let usage: Int32 = 64
}

/// Builds one-line JSON objects with keys in a fixed, readable order (JSONSerialization sorts or
/// shuffles them).
struct JSONLine {
    private var fields: [String] = []

    mutating func string(_ key: String, _ value: String) {
        fields.append("\(JSONLine.quote(key)):\(JSONLine.quote(value))")
    }

    mutating func number(_ key: String, _ value: Int) {
        fields.append("\(JSONLine.quote(key)):\(value)")
    }

    mutating func bool(_ key: String, _ value: Bool) {
        fields.append("\(JSONLine.quote(key)):\(value)")
    }

    mutating func strings(_ key: String, _ values: [String]) {
        fields.append("\(JSONLine.quote(key)):[" + values.map(JSONLine.quote).joined(separator: ",") + "]")
    }

    var text: String { "{" + fields.joined(separator: ",") + "}" }

    /// RFC 8259 string with the required escapes.
    static func quote(_ text: String) -> String {
        HTTPDNSJSONText.quote(text)
    }
}
