import DNSWire

extension DNSStubCache {
    /// How long `response`, an answer to `question`, stays fresh; nil when it is not cached.
    ///
    /// - Positive (NOERROR with a record of the type asked, or any record for ANY): the smallest TTL
    ///   of every record kept, answer, authority and additional, capped at ``Configuration/maximumTTL``;
    ///   a TTL of 0 is not cached (RFC 1035 §3.2.1).
    /// - Negative (NXDOMAIN, or NODATA: NOERROR without the type, RFC 2308 §2): min(SOA TTL, SOA
    ///   MINIMUM) of the authority section's SOA (RFC 2308 §5), kept within
    ///   ``Configuration/minimumNegativeTTL``…``Configuration/maximumNegativeTTL``, and no longer than a
    ///   CNAME chain before it. Without an SOA it is not cached (RFC 2308 §5).
    /// - SERVFAIL, REFUSED, any other RCODE and truncated answers: never cached. RFC 2308 §7.1 allows
    ///   SERVFAIL for up to 5 minutes, but a failure cached here would outlive the outage that caused
    ///   it; the next query retries the upstream, and serve-stale covers the outage meanwhile.
    ///
    /// TTLs with the top bit set count as 0 (RFC 2181 §8).
    package func cacheTTL(of response: DNSStubResponse, question: DNSQuestion) -> UInt32? {
        guard !response.isTruncated, response.rcode == .noError || response.rcode == .nameError else { return nil }
        let positive = response.rcode == .noError
            && response.answers.contains { question.type == .ANY || $0.type == question.type }
        if positive {
            let records = response.answers + response.authorities + response.additionals
            guard let smallest = records.map({ Self.effectiveTTL($0.ttl) }).min(), smallest > 0 else { return nil }
            return min(smallest, Configuration.ttl(configuration.maximumTTL))
        }
        guard let soaRecord = response.authorities.first(where: { $0.type == .SOA }),
              case .soa(let soa) = soaRecord.data
        else { return nil }
        let negative = min(Self.effectiveTTL(soaRecord.ttl), Self.effectiveTTL(soa.minimum))
        var ttl = max(Configuration.ttl(configuration.minimumNegativeTTL), min(Configuration.ttl(configuration.maximumNegativeTTL), negative))
        if let chain = response.answers.map({ Self.effectiveTTL($0.ttl) }).min() { ttl = min(ttl, chain) }
        return ttl > 0 ? ttl : nil
    }

    /// A TTL as RFC 2181 §8 reads it: values with the top bit set mean 0.
    package static func effectiveTTL(_ ttl: UInt32) -> UInt32 {
        ttl > UInt32(Int32.max) ? 0 : ttl
    }

    /// `entry` at `now`, fresh: every record's TTL less the whole seconds elapsed, at least 0, and
    /// never above the entry's own TTL (so the SOA of a negative answer says how long the negative
    /// answer lasts, RFC 2308 §5).
    func fresh(_ entry: Entry, now: Double) -> Hit {
        let elapsed = UInt32(min(max(0, now - entry.storedAt), Double(entry.ttl)).rounded(.down))
        var response = entry.response
        let countDown = { (record: DNSRecord) -> DNSRecord in
            var record = record
            let base = min(Self.effectiveTTL(record.ttl), entry.ttl)
            record.ttl = base > elapsed ? base - elapsed : 0
            return record
        }
        response.answers = response.answers.map(countDown)
        response.authorities = response.authorities.map(countDown)
        response.additionals = response.additionals.map(countDown)
        return Hit(response: response, remainingTTL: entry.ttl - elapsed, isStale: false)
    }

    /// `entry` served stale: every TTL ``Configuration/staleTTL``, with EDE 3 Stale Answer or 19
    /// Stale NXDOMAIN Answer (RFC 8914 §4.4, §4.20).
    func stale(_ entry: Entry) -> Hit {
        var response = entry.response
        let ttl = Configuration.ttl(configuration.staleTTL)
        let restamp = { (record: DNSRecord) -> DNSRecord in
            var record = record
            record.ttl = ttl
            return record
        }
        response.answers = response.answers.map(restamp)
        response.authorities = response.authorities.map(restamp)
        response.additionals = response.additionals.map(restamp)
        let code: DNSExtendedError.InfoCode = response.rcode == .nameError ? .staleNXDOMAIN : .staleAnswer
        response.extendedError = DNSExtendedError(code, "served stale: upstream failed")
        return Hit(response: response, remainingTTL: 0, isStale: true)
    }
}
