#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension Command {
    /// `httpdns demo`: replaces this process with `httpdns-demo` from the same directory. The demo
    /// links nginx, dnsmasq and private-CA launchers, which the shipped tool does not carry.
    static func runDemoProgram(arguments: [String]) -> Int32 {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let program = directory.appendingPathComponent("httpdns-demo").path
        guard access(program, X_OK) == 0 else {
            Output.error("the demo is a separate program, httpdns-demo, and it is not next to httpdns in \(directory.path) (`make demo` builds and runs it)")
            return ExitStatus.failure
        }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        execv(program, argv)
        Output.error("cannot run \(program): \(String(cString: strerror(errno)))")
        return ExitStatus.failure
    }
}
