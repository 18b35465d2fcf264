#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A closed pipe (`httpdns fetch URL | head`) must be a write error the tool reports, not a signal
// that kills it mid-way.
signal(SIGPIPE, SIG_IGN)
let status = await Command.main(Array(CommandLine.arguments.dropFirst()))
exit(status)
