import Foundation
import HTTPDNSCore
import HTTPServing

/// Encoded RFC 8484 answers that the zone alone gave, by query: a repeated query (the same bytes
/// after its ID) is answered with a copy of the encoded answer under its own ID, without decoding,
/// looking up or encoding again.
///
/// Each zone the service loads gets a cache of its own (``HTTPDNSService/reload(zone:views:)`` starts
/// an empty one), so an entry never outlives the zone (and views) that made it. Entries are kept per
/// view: the same query bytes from clients of two views are two entries, so a kept answer never
/// crosses views (a query's Client Subnet option is part of its bytes, and so is the scope its
/// answer echoes). Only answers whose every part came
/// from the zone are kept: nothing in them ages (upstream answers' TTLs do, and they depend on the
/// client subnet). Bounded by ``capacity``: when full it starts over, so a flood of distinct names
/// costs what it would without the cache and no more memory.
final class HTTPDNSWireAnswerCache: Sendable {
    struct Entry: Sendable {
        /// The encoded answer, its ID 0.
        var message: [UInt8]
        /// The HTTP response's header fields, built once.
        var headers: [HTTPServer.Header]
        /// What the answer was made of, for the metrics and the access log of the queries it answers.
        var description: HTTPDNSServiceLookups.Description
    }

    /// Most queries kept.
    static let capacity = 4_096

    /// A query's bytes after its 2-byte ID, hashed in one pass (an array's own hashing feeds the
    /// hasher one byte at a time).
    struct Key: Hashable {
        /// The view the answer was made for (``HTTPDNSViewMatcher/Match/index``).
        var view: Int
        var bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            hasher.combine(view)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private let entries = HTTPDNSLock<[Key: Entry]>([:])

    init() {}

    /// The response to `query` (a whole message, ID first), its answer under `query`'s ID, and
    /// what the answer was made of; nil when none is kept. The message is copied once, straight
    /// into the body; the header fields are shared.
    func answer(to query: [UInt8], view: Int = 0) -> (response: HTTPServer.Response, description: HTTPDNSServiceLookups.Description)? {
        guard query.count >= 12, let entry = entries.withLock({ $0[Key(view: view, bytes: query[2...])] }) else { return nil }
        var body = Data(entry.message)
        body[body.startIndex] = query[0]
        body[body.startIndex + 1] = query[1]
        return (HTTPServer.Response(status: 200, headers: entry.headers, body: body), entry.description)
    }

    /// Keeps `message`, the answer to `query` (both whole messages, IDs first), when `query` means
    /// the same whatever its ID (``isSelfContained(_:)``).
    func store(
        _ message: [UInt8], maxAge: UInt32, description: HTTPDNSServiceLookups.Description, for query: [UInt8], view: Int = 0
    ) {
        guard message.count >= 12, Self.isSelfContained(query) else { return }
        var kept = message
        kept[0] = 0
        kept[1] = 0
        let entry = Entry(message: kept, headers: HTTPDNSService.dnsMessageHeaders(maxAge: maxAge), description: description)
        let key = Key(view: view, bytes: ArraySlice(Array(query[2...])))
        entries.withLock { entries in
            if entries.count >= Self.capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }

    /// Whether `query` reads the same whatever its ID: one question whose name has no compression
    /// pointer, and nothing else but OPT records owned by the root, up to its last byte. A pointer can
    /// reach back into the header, ID included (fuzzing found one), so that two queries alike after
    /// their IDs could mean different names; such queries are answered afresh each time.
    static func isSelfContained(_ query: [UInt8]) -> Bool {
        walk(query).selfContained
    }

    /// The Client Subnet option of a self-contained query (``isSelfContained(_:)``), read without
    /// decoding the message: the first OPT record's first such option, as the decoder's
    /// `DNSMessage.edns` would give it. Nil when there is none or the query is not self-contained.
    static func clientSubnet(in query: [UInt8]) -> HTTPDNSQuerySubnet? {
        let walked = walk(query)
        guard walked.selfContained, let options = walked.firstOptions,
              case .subnet(let subnet) = HTTPDNSQuerySubnet.read(Array(query[options]))
        else { return nil }
        return subnet
    }

    /// The first OPT record's options of a self-contained query, read without decoding it; nil
    /// when it has no OPT record or is not self-contained.
    static func ednsOptions(in query: [UInt8]) -> [UInt8]? {
        let walked = walk(query)
        guard walked.selfContained, let options = walked.firstOptions else { return nil }
        return Array(query[options])
    }

    /// Walks `query`'s layout: whether it is self-contained, and where the first OPT record's
    /// options lie.
    private static func walk(_ query: [UInt8]) -> (selfContained: Bool, firstOptions: Range<Int>?) {
        guard query.count >= 12 else { return (false, nil) }
        func count(_ offset: Int) -> Int { Int(query[offset]) << 8 | Int(query[offset + 1]) }
        guard count(4) == 1, count(6) == 0, count(8) == 0 else { return (false, nil) }
        var index = 12
        while true {
            guard index < query.count else { return (false, nil) }
            let length = Int(query[index])
            index += 1
            if length == 0 { break }
            guard length <= 63 else { return (false, nil) }  // a pointer (or a reserved label type)
            index += length
        }
        index += 4  // type and class
        var firstOptions: Range<Int>?
        for _ in 0..<count(10) {
            // Root owner (one zero byte), TYPE 41, class, TTL, RDLENGTH, then the options.
            guard index + 11 <= query.count, query[index] == 0, count(index + 1) == 41 else { return (false, nil) }
            let end = index + 11 + count(index + 9)
            if firstOptions == nil, end <= query.count { firstOptions = (index + 11)..<end }
            index = end
        }
        return (index == query.count, firstOptions)
    }

    /// Queries kept now.
    var count: Int { entries.withLock { $0.count } }
}
