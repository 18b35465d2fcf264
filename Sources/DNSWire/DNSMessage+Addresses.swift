/// The addresses a response gives for a name, after following CNAMEs.
package struct DNSAddressAnswer: Sendable, Hashable {
    /// The name the addresses belong to: the end of the CNAME chain (the question name if none).
    package var canonicalName: DNSName
    /// The CNAME targets followed, in order (empty without aliases).
    package var aliases: [DNSName]
    /// A and AAAA RDATA (4 or 16 bytes each) in the order of the answer section.
    package var addresses: [[UInt8]]
    /// The smallest TTL of the records used (CNAMEs and addresses); `nil` if none was used.
    package var ttl: UInt32?

    package init(canonicalName: DNSName, aliases: [DNSName] = [], addresses: [[UInt8]] = [], ttl: UInt32? = nil) {
        self.canonicalName = canonicalName
        self.aliases = aliases
        self.addresses = addresses
        self.ttl = ttl
    }
}

extension DNSMessage {
    /// Most CNAME links followed before giving up; real chains are a handful long.
    package static let maxCNAMEChain = 16

    /// The A and AAAA records for `name` in the answer section, following CNAMEs.
    ///
    /// The chain is followed from `name`, at most ``maxCNAMEChain`` links, stopping at a name seen
    /// before, so a looping or endless chain ends with whatever addresses were found (none).
    /// Only class IN records count. The TTL is the minimum over every record used, since the answer
    /// is only as fresh as its weakest link.
    ///
    /// - Parameters:
    ///   - name: the name asked about (usually the question name).
    ///   - followingCNAMEs: follow aliases (default true); false returns only records owned by `name`.
    package func addresses(for name: DNSName, followingCNAMEs: Bool = true) -> DNSAddressAnswer {
        var result = DNSAddressAnswer(canonicalName: name)
        var current = name
        // Filled at the first alias: most answers have none, and an empty set costs nothing.
        var seen: Set<DNSName> = []
        func lower(_ ttl: UInt32) {
            result.ttl = min(result.ttl ?? ttl, ttl)
        }
        if followingCNAMEs {
            for _ in 0..<Self.maxCNAMEChain {
                guard let alias = answers.first(where: {
                    $0.recordClass == .IN && $0.name == current && $0.type == .CNAME
                }), case .cname(let target) = alias.data else { break }
                lower(alias.ttl)
                if seen.isEmpty { seen.insert(name) }
                if !seen.insert(target).inserted {
                    // A loop: no name in it can have addresses worth trusting.
                    return DNSAddressAnswer(canonicalName: target, aliases: result.aliases + [target], ttl: result.ttl)
                }
                result.aliases.append(target)
                current = target
            }
        }
        result.canonicalName = current
        for record in answers where record.recordClass == .IN && record.name == current {
            if let bytes = record.data.addressBytes {
                result.addresses.append(bytes)
                lower(record.ttl)
            }
        }
        return result
    }

    /// How long a negative answer (NXDOMAIN or NODATA) may be cached: `min(SOA TTL, SOA MINIMUM)`
    /// of the first SOA in the authority section (RFC 2308 §5); `nil` without an SOA, in which case
    /// the answer should not be cached (RFC 2308 §5).
    package var negativeTTL: UInt32? {
        for record in authorities {
            if case .soa(let soa) = record.data { return min(record.ttl, soa.minimum) }
        }
        return nil
    }

    /// True when `other` asks the same questions (names compared without case, RFC 5452 §9.1).
    package func hasSameQuestions(as other: DNSMessage) -> Bool {
        questions == other.questions
    }
}
