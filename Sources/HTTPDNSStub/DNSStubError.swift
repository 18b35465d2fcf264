/// Why the stub daemon could not take its sockets: its own error, not the client's `HTTPDNSError`
/// (an upstream exchange keeps the engine's vocabulary; the daemon's sockets are not an exchange).
///
/// Compare by ``code``; ``detail`` is context for logs (the call and its `errno` text, or which
/// descriptor systemd passed).
package struct DNSStubError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case socket
            case socketActivation
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A UDP or TCP socket could not be made, bound or set listening (`socket(2)`, `bind(2)`,
        /// `listen(2)`, `getsockname(2)`): the address is taken, not local, or not allowed.
        package static let socket = Code(.socket)
        /// The sockets systemd passed (`LISTEN_FDS`) are not one UDP socket and one listening TCP
        /// socket, IPv4 or IPv6.
        package static let socketActivation = Code(.socketActivation)

        package var description: String { base.rawValue }
    }

    package var code: Code
    /// Context for people: the call and its `errno` text, or the descriptor.
    package var detail: String

    package init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The code, then the detail: `socket: bind: Address already in use`.
    package var description: String { detail.isEmpty ? code.description : "\(code): \(detail)" }
}
