#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How many CPUs this process may use, for the default number of event loops (`httpdns serve
/// --threads`, the proxy's loops).
///
/// The process's affinity mask, as `taskset` or a container's cpuset sets it, read from the
/// `Cpus_allowed_list` line of `/proc/self/status` (Swift's Glibc does not offer
/// `sched_getaffinity`, and Foundation's `activeProcessorCount` ignores the mask); the online CPUs
/// where that line cannot be read. A CPU quota (cgroup `cpu.max`) is not a mask and is not counted.
package enum HTTPDNSProcessors {
    /// The CPUs this process may run on, at least 1; read once.
    package static let usable: Int = {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        guard let status = readStatus(), let allowed = allowedCount(status: status) else { return online }
        return max(1, min(allowed, online))
    }()

    /// The number of CPUs in the `Cpus_allowed_list:` line of a `/proc/PID/status` text (`0-3,6`), or
    /// nil when there is no such line or it does not read as a CPU list.
    package static func allowedCount(status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed_list:") {
            let words = line.dropFirst("Cpus_allowed_list:".count).split(whereSeparator: \.isWhitespace)
            return words.count == 1 ? count(list: words[0]) : nil
        }
        return nil
    }

    /// The number of CPUs in a kernel CPU list (`0`, `0-3`, `0,2-5,8`), or nil when it is not one.
    package static func count(list: Substring) -> Int? {
        guard !list.isEmpty else { return nil }
        var total = 0
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), bounds.allSatisfy({ (1...5).contains($0.count) && $0.allSatisfy { ("0"..."9").contains($0) } }),
                  let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]), low <= high
            else {
                return nil
            }
            total += high - low + 1
        }
        return total
    }

    /// `/proc/self/status` as text, or nil off Linux or when it cannot be read.
    private static func readStatus() -> String? {
        #if os(Linux)
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
        #else
        return nil
        #endif
    }
}
