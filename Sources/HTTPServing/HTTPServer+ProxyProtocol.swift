import HTTPDNSCore

extension HTTPServer {
    /// PROXY protocol (v1 text, v2 binary) in front of HTTP: a balancer that terminates or passes TCP
    /// states the client's address in a header before the first byte of the connection's own data.
    ///
    /// The server believes that header only from peers ``expects`` names (a balancer you trust): it
    /// reads it within ``Limits/handshakeTimeout``, then hands the rest of the bytes to HTTP (or TLS)
    /// as usual and reports the stated client as ``Request/remoteAddress``. A header from any other
    /// peer is read the same way and dropped: the peer stays the client, and a balancer left out of
    /// the trusted list still gets its requests answered (by its own address). Connection limits still count the
    /// balancer's own address. The header's syntax is left to ``parse`` (a pure parser).
    package struct ProxyProtocol: Sendable {
        /// What ``parse`` found at the start of a connection.
        package enum Header: Sendable, Equatable {
            /// Not a whole header yet.
            case needMore
            /// A broken PROXY header: the connection is closed.
            case invalid
            /// No PROXY header: the connection's bytes are its own (a balancer that sends only
            /// `X-Forwarded-For`, or a direct client).
            case absent
            /// A header of `length` bytes; `source` is the client, nil to keep the peer's address
            /// (`PROXY UNKNOWN`, v2 `LOCAL`).
            case header(length: Int, source: HTTPDNSIPAddress?, port: Int)
        }

        /// Whether a connection from `peer` on listener `listener` must start with a PROXY header.
        package var expects: @Sendable (_ listener: Int, _ peer: HTTPDNSIPAddress) -> Bool
        /// Reads the header at the start of the connection's first bytes.
        package var parse: @Sendable (UnsafeRawBufferPointer) -> Header

        package init(
            expects: @escaping @Sendable (_ listener: Int, _ peer: HTTPDNSIPAddress) -> Bool,
            parse: @escaping @Sendable (UnsafeRawBufferPointer) -> Header
        ) {
            self.expects = expects
            self.parse = parse
        }
    }
}
