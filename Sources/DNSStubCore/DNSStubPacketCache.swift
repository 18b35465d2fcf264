#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The stub's UDP packet cache: answers the stub made for the same query bytes a moment ago, sent
/// again with only the ID changed, without parsing the query or encoding the answer (what dnsdist's
/// packet cache does). It sits in front of the stub's real caches (the engine's and the wire
/// cache), which stay the truth: an entry lives at most ``Configuration/lifetime`` (one second by
/// default) and never past its answer's smallest TTL less one second, so a TTL it repeats is never
/// more than a second above the one the real cache would give, and nothing the real caches drop is
/// served for longer than that.
///
/// The key is the whole query but its ID: the question with its case, the flags, the EDNS record
/// (the client's size, the DO bit, any option) all take part, so an entry answers exactly the
/// message that was answered, and a query first taken apart by ``DNSStubFront`` and found valid is
/// the only kind that is stored. A value owned by one thread (the stub's UDP thread); no lock.
package struct DNSStubPacketCache<Source: Sendable>: Sendable {
    /// Settings, each with its default.
    package struct Configuration: Sendable {
        /// Longest time an entry is used, in seconds. Default 1.
        package var lifetime: Double = 1
        /// Most entries; a store past it empties the cache first. Default 16,384.
        package var capacity: Int = 16_384

        package init() {}
    }

    /// One kept answer.
    private struct Entry: Sendable {
        /// The query it answers, without its ID.
        var query: [UInt8]
        /// The answer as sent, ID included (replaced at each use).
        var answer: [UInt8]
        /// When it stops being used, in the caller's seconds.
        var expiry: Double
        /// Which of the stub's sources made it (for the metrics).
        var source: Source
    }

    package let configuration: Configuration
    /// By the hash of the query without its ID; a collision is a miss (the entry's query is compared).
    private var entries: [Int: Entry] = [:]
    /// Answers given since the start.
    package private(set) var hits = 0

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    package var count: Int { entries.count }

    private static func key(_ query: ArraySlice<UInt8>) -> Int {
        var hasher = Hasher()
        query.dropFirst(2).withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    /// Whether two byte strings are equal, compared as memory (the generic `elementsEqual` was a
    /// visible share of a hit's time).
    private static func same(_ kept: [UInt8], _ asked: ArraySlice<UInt8>) -> Bool {
        kept.count == asked.count && kept.withUnsafeBytes { a in asked.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
    }

    /// The kept answer to `query` (a whole DNS message) with the query's ID, and its source; nil
    /// when none is kept or it has expired.
    package mutating func answer(_ query: ArraySlice<UInt8>, now: Double) -> (answer: [UInt8], source: Source)? {
        guard query.count > 12 else { return nil }
        let key = Self.key(query)
        guard let entry = entries[key], Self.same(entry.query, query.dropFirst(2)) else { return nil }
        guard now < entry.expiry else {
            entries[key] = nil
            return nil
        }
        hits += 1
        var answer = entry.answer
        answer[0] = query[query.startIndex]
        answer[1] = query[query.startIndex + 1]
        return (answer, entry.source)
    }

    /// Keeps `answer` for `query`, when it can be repeated: a whole answer (not truncated) with
    /// NOERROR or NXDOMAIN and every TTL in it over one second (``ttls(in:)``). `source` is
    /// returned with each hit.
    package mutating func store(_ query: ArraySlice<UInt8>, answer: [UInt8], now: Double, source: Source) {
        guard query.count > 12, answer.count >= 12, answer[2] & 0x02 == 0, answer[3] & 0x0F == 0 || answer[3] & 0x0F == 3,
              let smallest = Self.ttls(in: answer)?.min(), smallest > 1
        else { return }
        if entries.count >= configuration.capacity { entries.removeAll(keepingCapacity: true) }
        let expiry = now + min(configuration.lifetime, Double(smallest - 1))
        entries[Self.key(query)] = Entry(query: Array(query.dropFirst(2)), answer: answer, expiry: expiry, source: source)
    }

    /// Forgets every entry (after the network changed, say).
    package mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
    }

    /// The TTLs of every record in a DNS message but the EDNS OPT pseudo-record (whose TTL field
    /// holds flags); nil when the message cannot be walked to its end.
    package static func ttls(in message: [UInt8]) -> [UInt32]? {
        guard message.count >= 12 else { return nil }
        func count(_ at: Int) -> Int { Int(message[at]) << 8 | Int(message[at + 1]) }
        var offset = 12
        /// Past the name at `offset`: labels up to the root, or a compression pointer.
        func skipName() -> Bool {
            while offset < message.count {
                let length = Int(message[offset])
                if length == 0 {
                    offset += 1
                    return true
                }
                if length & 0xC0 == 0xC0 {
                    offset += 2
                    return offset <= message.count
                }
                guard length & 0xC0 == 0 else { return false }
                offset += 1 + length
            }
            return false
        }
        for _ in 0..<count(4) {
            guard skipName(), offset + 4 <= message.count else { return nil }
            offset += 4
        }
        var ttls: [UInt32] = []
        for _ in 0..<(count(6) + count(8) + count(10)) {
            guard skipName(), offset + 10 <= message.count else { return nil }
            let type = count(offset)
            let ttl = UInt32(message[offset + 4]) << 24 | UInt32(message[offset + 5]) << 16 | UInt32(message[offset + 6]) << 8 | UInt32(message[offset + 7])
            let length = count(offset + 8)
            offset += 10 + length
            guard offset <= message.count else { return nil }
            if type != 41 { ttls.append(ttl) }
        }
        return offset == message.count ? ttls : nil
    }
}
