#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// This process's memory as `/proc/self/status` reports it, for the tests and `httpdns-bench` rows
/// that bound how much a transfer may hold.
package enum ProcessMemory {
    /// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), or nil when missing.
    package static func statusBytes(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let number = line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            return number.map { $0 * 1024 }
        }
        return nil
    }

    /// Current resident set size in bytes.
    package static func residentBytes() -> Int { statusBytes("VmRSS") ?? 0 }

    /// Resets the peak RSS (`VmHWM`) to the current RSS by writing 5 to `/proc/self/clear_refs`
    /// (Linux 4.0+). Returns false where that is not supported.
    package static func resetPeakResident() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    /// Returns freed heap memory to the system so RSS deltas count live memory, not free lists.
    /// (`malloc_trim` is glibc-only and not in Swift's Glibc module: found with `dlsym`.)
    package static func trimHeap() {
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }

    /// Live heap bytes as a sanitizer's allocator counts them (`__sanitizer_get_current_allocated_bytes`),
    /// or nil when the process runs without AddressSanitizer or ThreadSanitizer.
    ///
    /// Why: under AddressSanitizer freed memory waits in a quarantine (256 MiB by default) before it
    /// is reused, so RSS grows with everything allocated, freed or not (a 256 MiB body streamed
    /// through a 4 MiB buffer grew RSS by 117 MiB); this counter is what is still in use.
    package static func sanitizerLiveHeapBytes() -> Int? {
        typealias Get = @convention(c) () -> UInt
        guard let symbol = dlsym(nil, "__sanitizer_get_current_allocated_bytes") else { return nil }
        return Int(unsafeBitCast(symbol, to: Get.self)())
    }

    /// The peak memory growth over a stretch of work: made just before it, stopped just after.
    ///
    /// At the start the heap is trimmed, the peak RSS reset to the current RSS (`clear_refs`) and
    /// `VmRSS` read as the baseline; ``stop()`` reads `VmHWM` (the peak since the reset). A sampler
    /// thread also reads `VmRSS` every `interval`, as a cross-check and as the fallback where
    /// `clear_refs` is unavailable; the larger peak counts. Under a sanitizer, where RSS is not live
    /// memory, the sampler reads ``sanitizerLiveHeapBytes()`` instead (``measure`` says which). The
    /// whole process is measured, so run nothing else meanwhile.
    package final class PeakGrowth: Sendable {
        /// What is measured: `"RSS"`, or `"live heap (sanitizer allocator)"`.
        package let measure: String
        private let sample: @Sendable () -> Int
        private let baseline: Int
        private let resetWorked: Bool
        private let peak = Atomic<Int>(0)
        private let running = Atomic<Bool>(true)
        private let done = DispatchSemaphore(value: 0)

        /// Starts measuring; the sampler gives up after `limit` (default 30 minutes).
        package init(interval: Duration = .milliseconds(1), limit: Duration = .seconds(1800)) {
            if let heap = ProcessMemory.sanitizerLiveHeapBytes() {
                measure = "live heap (sanitizer allocator)"
                sample = { ProcessMemory.sanitizerLiveHeapBytes() ?? 0 }
                resetWorked = false
                baseline = heap
            } else {
                measure = "RSS"
                sample = { ProcessMemory.residentBytes() }
                ProcessMemory.trimHeap()
                resetWorked = ProcessMemory.resetPeakResident()
                baseline = ProcessMemory.residentBytes()
            }
            let microseconds = UInt32(max(100, interval / .microseconds(1)))
            let giveUp = ContinuousClock.now + limit
            let thread = Thread { [self] in
                while running.load(ordering: .acquiring), ContinuousClock.now < giveUp {
                    let bytes = sample()
                    if bytes > peak.load(ordering: .relaxed) { peak.store(bytes, ordering: .relaxed) }
                    usleep(microseconds)
                }
                done.signal()
            }
            thread.start()
        }

        /// The figure when measuring started, in bytes.
        package var baselineBytes: Int { baseline }

        /// Stops the sampler; returns the peak growth over the baseline in bytes (0 when it fell).
        /// Call once.
        package func stop() -> Int {
            running.store(false, ordering: .releasing)
            done.wait()
            let sampled = max(peak.load(ordering: .relaxed), sample())
            let highWater = resetWorked ? (ProcessMemory.statusBytes("VmHWM") ?? 0) : 0
            return max(0, max(sampled, highWater) - baseline)
        }
    }
}
