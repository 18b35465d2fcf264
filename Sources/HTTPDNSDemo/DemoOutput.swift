import Foundation

/// The demo's terminal output: lines to stdout, diagnostics to stderr, written at once.
enum DemoOutput {
    static let help = """
        OVERVIEW: Show DNS hijacking and swift-httpdns's protection side by side, all on loopback.

        Starts nginx (two HTTPS sites on 127.0.0.2 told apart only by SNI, and a plain HTTP one), a \
        hijacker's ad page on 127.0.0.3, dnsmasq on 127.0.0.4 as a LocalDNS that sends the demo names to \
        127.0.0.3, and an HTTPDNS service on 127.0.0.5 that knows the truth; fetches each URL without and \
        with protection, runs the hijack check, runs getent, dig and curl through `httpdns stub` on \
        127.0.0.6 (as root, in a private mount namespace whose resolv.conf names the stub), and stops \
        everything it started (also on Ctrl-C).
        Needs nginx-light, dnsmasq-base and openssl (`make demo` installs them).

        USAGE: httpdns-demo

        OPTIONS:
          -h, --help              Show help information.
        """

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func diagnostic(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func error(_ message: String) {
        diagnostic("httpdns-demo: error: \(message.split(whereSeparator: \.isNewline).joined(separator: " "))")
    }
}
