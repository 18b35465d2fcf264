import DNSStubCore
import DNSWire
import HTTPDNSCore

extension HTTPDNSFuzzTarget {
    /// The stub's DNS front (issue 23): any received message, over UDP from an allowed client and a
    /// stranger and over TCP, is dropped or answered with a message that decodes, has the message's
    /// ID and QR set, and fits the client's limit (512 bytes for immediate replies over UDP). A query
    /// it resolves is answered, through the cache too, with its question byte for byte and within
    /// its size limit, whether the answer is the input itself taken as an upstream's, many records,
    /// or a SERVFAIL with a long Extended DNS Error.
    static let stubFront = HTTPDNSFuzzTarget(
        "stub-front", "stub front: dropped, or answers that decode with the ID, QR and question, within the size limit"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let front = DNSStubFront()
        let id = bytes.count >= 2 ? UInt16(bytes[0]) << 8 | UInt16(bytes[1]) : 0
        for (transport, allowed) in [(DNSStubTransport.udp, true), (.udp, false), (.tcp, true)] {
            switch front.receive(bytes, transport: transport, clientAllowed: allowed) {
            case .drop:
                continue
            case .reply(let answer, let reason):
                try require(reason.responseCode != nil, "replied to a message it should drop: \(reason)")
                let message = try checkAnswer(answer, id: id, limit: transport == .udp ? 512 : 65535)
                try require(message.questions.count <= 1, "more than one question echoed")
            case .resolve(let request):
                try require(request.id == id, "request ID")
                try require(allowed, "resolved for a stranger")
                for response in stubResponses(bytes, request) {
                    let message = try checkAnswer(front.encode(response, for: request), id: id, limit: request.responseSizeLimit())
                    try require(message.questions.count == 1 && message.questions[0].name.labels == request.question.name.labels,
                                "question not echoed as asked")
                    try require(!message.isTruncated || message.answers.isEmpty, "partial answer with TC")
                }
            }
        }
    }

    /// Answers for `request`: the input as an upstream's answer, many records, a long SERVFAIL,
    /// and the first two back from the cache (fresh, then stale).
    private static func stubResponses(_ bytes: [UInt8], _ request: DNSStubRequest) -> [DNSStubResponse] {
        var responses: [DNSStubResponse] = []
        if let upstream = try? DNSMessage(decoding: bytes) { responses.append(DNSStubResponse(upstream: upstream)) }
        let name = request.question.name
        let many = (0..<Int(request.id & 0xFF)).map { DNSRecord(name: name, ttl: UInt32($0), data: .a([192, 0, 2, UInt8($0)])) }
        responses.append(DNSStubResponse(answers: many, authenticData: true))
        responses.append(.serverFailure(.networkError, String(repeating: "ü", count: Int(request.id >> 8))))
        var cache = DNSStubCache()
        for response in responses.prefix(2) {
            cache.store(response, for: request, now: 0)
            if let hit = cache.lookup(request, now: 1) { responses.append(hit.response) }
            if let hit = cache.lookup(request, now: 100_000, upstreamFailed: true) { responses.append(hit.response) }
        }
        return responses
    }

    /// Decodes an answer and checks its ID, QR and size.
    private static func checkAnswer(_ answer: [UInt8], id: UInt16, limit: Int) throws(HTTPDNSFuzzFailure) -> DNSMessage {
        try require(answer.count <= limit, "answer of \(answer.count) bytes over the limit \(limit)")
        guard let message = try? DNSMessage(decoding: answer) else { throw HTTPDNSFuzzFailure(detail: "answer does not decode") }
        try require(message.id == id, "answer ID \(message.id), query \(id)")
        try require(message.isResponse, "QR clear")
        return message
    }
}

extension HTTPDNSFuzzTarget {
    /// The stub's persisted wire cache (`--cache-dir`, issue 23): a file loads whole or not at all,
    /// and what loads saves back to a file that loads the same entries in the same order.
    static let stubCache = HTTPDNSFuzzTarget(
        "stub-cache", "stub cache files load whole or nothing, and what loads saves back the same"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // The seeds are stored at wall clock 1,800,000,000; a minute later they are all fresh.
        let wallClock: Double = 1_800_000_060
        var cache = DNSStubCache()
        guard let count = try? DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: 0, wallClock: wallClock) else {
            try require(cache.count == 0, "a refused file left entries")
            return
        }
        try require(count == cache.count, "\(count) loaded, \(cache.count) in the cache")
        let saved = DNSStubCacheFile.encode(cache, now: 0, wallClock: wallClock, key: nil)
        var again = DNSStubCache()
        guard let reloaded = try? DNSStubCacheFile.load(saved, key: nil, into: &again, now: 0, wallClock: wallClock) else {
            throw HTTPDNSFuzzFailure(detail: "a saved cache does not load")
        }
        try require(reloaded == count && again.keys == cache.keys, "saved back different entries")
    }
}
