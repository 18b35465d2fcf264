import DNSWire
import Foundation
import HTTPDNSCore

/// The provider formats: an answer body, whatever it holds, parses into record sets that keep the
/// limits every format promises, or into a typed error.
///
/// Input layout: one byte picks the format's configuration, one the family, one the request's hosts;
/// the rest is the answer body.
extension HTTPDNSFuzzTarget {
    static let dnspod = HTTPDNSFuzzTarget("dnspod", "DNSPod answers (plain, DES, AES) keep the format limits") {
        bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        var configuration = DNSPodFormat.Configuration()
        switch input.choice(3) {
        case 1: (configuration.accountID, configuration.key, configuration.algorithm) = ("1", "12345678", .des)
        case 2: (configuration.accountID, configuration.key, configuration.algorithm) = ("1", "0123456789abcdef", .aes)
        default: break
        }
        let format = DNSPodFormat(configuration: configuration) { count in [UInt8](repeating: 7, count: count) }
        try checkFormat(format, &input, batch: true)
    }

    static let alibaba = HTTPDNSFuzzTarget("alibaba", "Alibaba answers (legacy, v2, encrypted v2) keep the format limits") {
        bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        var configuration = AlibabaFormat.Configuration(accountID: "100000")
        switch input.choice(3) {
        case 1: (configuration.api, configuration.secret) = (.v2, "secret")
        case 2: (configuration.api, configuration.secret, configuration.encryptionKey) = (.v2, "secret", Array("0123456789abcdef".utf8))
        default: break
        }
        let format = AlibabaFormat(configuration: configuration) { count in [UInt8](repeating: 7, count: count) }
        try checkFormat(format, &input, batch: true)
    }

    static let dohWire = HTTPDNSFuzzTarget(
        "doh-wire", "DoH wire answers keep the format limits (TTL ≤ 2^31-1); base64url agrees with Foundation"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        let format = DoHWireFormat(url: "https://doh.test/dns-query", method: input.choice(2) == 0 ? .get : .post)
        let body = input.rest
        try checkFormat(format, &input, batch: false, families: [.ipv4, .ipv6])
        let reference = Data(body).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        try require(DoHWireFormat.base64URL(body) == reference, "base64url differs from Foundation's")
    }

    static let dohJSON = HTTPDNSFuzzTarget("doh-json", "DoH JSON answers keep the format limits") {
        bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        let format = DoHJSONFormat(configuration: .init(url: "https://doh.test/resolve"))
        try checkFormat(format, &input, batch: false, families: [.ipv4, .ipv6])
    }

    static let ipList = HTTPDNSFuzzTarget("ip-list", "IP-list answers keep the format limits") {
        bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        let format = IPListFormat(configuration: .init(url: "https://iplist.test/resolve?key=k"))
        try checkFormat(format, &input, batch: false)
    }

    /// Builds a request from the input's choices, parses the rest as its answer and checks the sets.
    private static func checkFormat(
        _ format: some HTTPDNSProviderFormat, _ input: inout FuzzInput, batch: Bool,
        families: [HTTPDNSAddressFamily] = [.ipv4, .ipv6, .both]
    ) throws(HTTPDNSFuzzFailure) {
        let family = families[input.choice(families.count)]
        let hostLists = batch ? [["www.example.test"], ["a.test", "www.example.test", "b.test"]] : [["www.example.test"]]
        let hosts = hostLists[input.choice(hostLists.count)]
        guard let request = (try? format.requests(for: hosts, family: family, now: 1_700_000_000))?.first else {
            throw HTTPDNSFuzzFailure(detail: "the fixed request for \(hosts) does not build")
        }
        let status = [200, 200, 200, 401, 500][input.choice(5)]
        guard let sets = try? format.parse(status: status, body: input.rest, for: request) else { return }
        try require((200...299).contains(status), "an answer with HTTP \(status) parsed")
        for set in sets {
            try require(request.hosts.contains(set.host), "a set for \(set.host), which was not asked")
            try require(set.ipv4.allSatisfy { $0.family == .v4 }, "a v6 address among the IPv4 ones")
            try require(set.ipv6.allSatisfy { $0.family == .v6 }, "a v4 address among the IPv6 ones")
            let limit = HTTPDNSFormatLimits.maxAddressesPerName
            try require(set.ipv4.count <= limit && set.ipv6.count <= limit, "more than \(limit) addresses")
            if let ttl = set.ttl {
                try require((0...HTTPDNSFormatLimits.maxTTL).contains(ttl), "TTL \(ttl) out of 0...2^31-1")
            }
            if let clientIP = set.clientIP { try require(clientIP.utf8.count <= 64, "client address of \(clientIP.utf8.count) bytes") }
        }
    }
}
