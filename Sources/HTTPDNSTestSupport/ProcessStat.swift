#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One reading of `/proc/PID/stat`, for the CPU a process has used (tests and `httpdns-bench`).
package struct ProcessStat {
    /// The fields after the command name, which is in parentheses and may hold spaces: state is
    /// index 0, parent pid 1, utime 11, stime 12 (the man page's fields 3, 4, 14 and 15).
    private let fields: [Substring]

    /// Reads the process's stat line; nil when it is gone or the line cannot be read.
    package init?(_ pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, Int(fields[11]) != nil, Int(fields[12]) != nil else { return nil }
        self.fields = fields
    }

    /// User plus system time, in clock ticks, every thread included.
    package var cpuTicks: Int { (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) }

    /// ``cpuTicks`` in seconds.
    package var cpuSeconds: Double { Self.seconds(ticks: cpuTicks) }

    /// The parent's process id.
    package var parent: Int32? { Int32(fields[1]) }

    /// The CPU time of process `pid` so far (every thread, user and system), in seconds to the
    /// nanosecond, from its CPU-time clock (`clock_getcpuclockid`); nil when it cannot be read.
    package static func cpuClockSeconds(_ pid: Int32) -> Double? {
        var clock = clockid_t()
        var time = timespec()
        guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 else { return nil }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Clock ticks in seconds.
    package static func seconds(ticks: Int) -> Double {
        Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
