#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(HTTPDNSPackage) import HTTPDNSCore

// A closed pipe (`httpdns fetch URL | head`) must be a write error the tool reports, not a signal
// that kills it mid-way.
signal(SIGPIPE, SIG_IGN)
// libcrypto must outlive the threads that use it while the process exits (see the function).
HTTPDNSCrypto.keepLibraryUntilExit()
let status = await Command.main(Array(CommandLine.arguments.dropFirst()))
exit(status)
