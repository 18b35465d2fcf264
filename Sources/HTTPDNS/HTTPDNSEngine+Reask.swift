import HTTPDNSCore

extension HTTPDNSEngine {
    /// Resolves `host` upstream even when the cache holds a fresh answer, and stores what comes back.
    ///
    /// For a client whose every address of a cached answer failed: seed 002's "ask whether the set of
    /// addresses should change" before it falls back to LocalDNS. The lookup is the usual one (the
    /// providers in order within the HTTPDNS budget, then LocalDNS unless HTTPDNS-only) and joins
    /// one already under way for the name rather than starting a second. IP literals, static
    /// entries and hosts the engine does not protect are answered as by ``resolve(_:family:)``
    /// (they are never cached). A failure leaves the cached answer as it was; no stale answer is
    /// served in its place.
    ///
    /// - Throws: ``HTTPDNSError``, as ``resolve(_:family:)``.
    package func resolveBypassingCache(_ host: String, family: HTTPDNSAddressFamily? = nil) async throws -> HTTPDNSAnswer {
        let key = HTTPDNSCacheKey(host: HTTPDNSHostPolicy.normalize(host), family: concreteFamily(family))
        return try await resolveMiss(key, original: host, family: family, staleFallback: false, bypassingCache: true)
    }
}
