import Foundation

extension RunningTool {
    /// What a sanitizer wrote to the process's stderr: the lines of AddressSanitizer, ThreadSanitizer
    /// and UndefinedBehaviorSanitizer (`runtime error:`) reports. Empty in a clean run, and always in
    /// a build without sanitizers; a daemon test checks it after the process has exited, next to its
    /// exit status, because a report inside a child process is otherwise seen by nobody.
    package var sanitizerReports: [String] {
        String(decoding: stderr, as: UTF8.self).split(separator: "\n").map(String.init).filter { line in
            Self.sanitizerMarks.contains { line.contains($0) }
        }
    }

    static let sanitizerMarks = ["AddressSanitizer", "ThreadSanitizer", "LeakSanitizer", "runtime error:"]
}
