import DNSWire
import HTTPDNSCore

extension HTTPDNSFuzzTarget {
    /// DNS messages: whatever decodes encodes again, and the encoding decodes to the same message.
    static let dnsCodec = HTTPDNSFuzzTarget(
        "dns-codec", "DNSMessage decode → encode → decode gives the same message"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        guard let message = try? DNSMessage(decoding: bytes) else { return }
        let encoded: [UInt8]
        do {
            encoded = try message.encode()
        } catch {
            throw HTTPDNSFuzzFailure(detail: "a decoded message does not encode: \(error)")
        }
        try require(encoded.count <= 65_535, "encoding of \(encoded.count) bytes")
        let again: DNSMessage
        do {
            again = try DNSMessage(decoding: encoded)
        } catch {
            throw HTTPDNSFuzzFailure(detail: "an encoded message does not decode: \(error)")
        }
        try require(again == message, "decode(encode(m)) != m")
        // Whatever the answer section holds, following CNAMEs ends (the chain guard) with 4/16-byte addresses.
        for question in message.questions {
            let found = message.addresses(for: question.name)
            try require(found.aliases.count <= DNSMessage.maxCNAMEChain, "chain of \(found.aliases.count)")
            try require(found.addresses.allSatisfy { $0.count == 4 || $0.count == 16 }, "address RDATA length")
        }
    }

    /// DNS names as text: presentation format round-trips; the host-name rules agree with each other;
    /// normalising is idempotent.
    static let dnsName = HTTPDNSFuzzTarget(
        "dns-name", "DNSName text round trip; host-name checks agree; normalize is idempotent"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let text = String(decoding: bytes, as: UTF8.self)
        if let name = try? DNSName(text) {
            try require(name.wireLength <= 255, "wire length \(name.wireLength)")
            try require(name.labels.allSatisfy { !$0.isEmpty && $0.count <= 63 }, "label lengths")
            for trailingDot in [false, true] {
                let printed = name.text(trailingDot: trailingDot)
                guard let back = try? DNSName(printed) else {
                    throw HTTPDNSFuzzFailure(detail: "printed name \(printed) does not parse")
                }
                try require(back == name && back.labels == name.labels, "text round trip of \(printed)")
            }
        }
        // Raw labels (split at NUL bytes) print to text that parses back to the same labels.
        let labels = bytes.split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
        if let name = try? DNSName(labels: labels) {
            let printed = name.text()
            guard let back = try? DNSName(printed) else {
                throw HTTPDNSFuzzFailure(detail: "printed name \(printed) does not parse")
            }
            try require(back.labels == name.labels, "labels round trip of \(printed)")
        }
        let valid = HTTPDNSHostPolicy.isValidHostName(text)
        let parsed = (try? DNSName(hostName: text)) != nil
        try require(valid == parsed, "isValidHostName \(valid) but DNSName(hostName:) \(parsed)")
        // Normalising is idempotent and keeps validity either way (`www..` must not become `www.`).
        let normalized = HTTPDNSHostPolicy.normalize(text)
        try require(HTTPDNSHostPolicy.normalize(normalized) == normalized, "normalize is not idempotent")
        try require(HTTPDNSHostPolicy.isValidHostName(normalized) == valid, "normalising changed validity")
        if valid {
            try require(!normalized.hasSuffix("."), "a valid name normalises with a trailing dot")
            try require(normalized == text.lowercased() || normalized + "." == text.lowercased(), "normalize changed more than case and the dot")
        }
    }
}
