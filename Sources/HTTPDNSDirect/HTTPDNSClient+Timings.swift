extension HTTPDNSConnectionReport {
    /// Where one request's time went (libcurl's `CURLINFO_*_TIME_T` for the connection that answered,
    /// the client's own clock for the rest).
    public struct Timings: Sendable, Hashable {
        /// Finding the addresses: the engine's lookup (near zero on a cache hit); zero when nothing
        /// was resolved (unprotected host, proxy, sticky block redirect).
        public var resolution: Duration = .zero
        /// The TCP connect to the address that answered (to the proxy when one was used); zero on a
        /// reused connection.
        public var connect: Duration = .zero
        /// The TLS handshake; zero for plain HTTP and on a reused connection.
        public var tls: Duration = .zero
        /// From the start of the request, resolution and failed or raced attempts included, to the
        /// first byte of the response.
        public var firstByte: Duration = .zero
        /// From the start of the request to the last byte of the body; nil in the report handed over
        /// with the response head (the body is still coming), set in ``HTTPDNSClientResponse/connection``.
        public var total: Duration? = nil

        package init() {}
    }
}
