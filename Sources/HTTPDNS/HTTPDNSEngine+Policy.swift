import HTTPDNSCore

extension HTTPDNSEngine {
    /// Whether requests to `host` go through the engine (IP literals never do): a host the current
    /// policy protects (``HTTPDNSConfiguration/protectedHosts``, or what ``updatePolicy(_:)`` set
    /// since), or one with a static entry.
    public func protects(_ host: String) -> Bool {
        policy.withLock { $0.protects(host) }
            || (!staticEntries.isEmpty && staticEntries[HTTPDNSHostPolicy.normalize(host)] != nil)
    }

    /// The hosts the engine protects now.
    public var protectedHosts: HTTPDNSHostPolicy {
        policy.withLock { $0 }
    }

    /// Replaces the protected hosts at run time (a remote configuration arrived, a user turned
    /// HTTPDNS off for a domain); requests that start after the call see the new policy. Cached
    /// answers stay: the policy decides which requests use the engine, not what it answers.
    public func updatePolicy(_ newPolicy: HTTPDNSHostPolicy) {
        policy.withLock { $0 = newPolicy }
    }
}
