// The libFuzzer entry points for every target in HTTPDNSFuzzTargets (built by Fuzz/fuzz.sh, not by
// SwiftPM: SwiftPM's Linux link of an executable defines `main`, which clashes with libFuzzer's).
//
// One binary serves every target; it is linked once and named `httpdns-fuzz-<target>` (hard links),
// and the name it was started under picks the target. A property that fails traps, so libFuzzer
// keeps the input as a crash file.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPDNSFuzzTargets

nonisolated(unsafe) private var selected: HTTPDNSFuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    let program = argv.pointee?.pointee.map { String(cString: $0) } ?? ""
    let name = program.split(separator: "/").last.map(String.init) ?? ""
    let prefix = "httpdns-fuzz-"
    guard name.hasPrefix(prefix), let target = HTTPDNSFuzzTarget.named(String(name.dropFirst(prefix.count))) else {
        let names = HTTPDNSFuzzTarget.all.map(\.name).joined(separator: ", ")
        fputs("start this binary as httpdns-fuzz-<target>, one of: \(names)\n", stderr)
        exit(64)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selected else { return 0 }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try target.run(bytes)
    } catch {
        fatalError("\(target.name): \(error)")
    }
    return 0
}
