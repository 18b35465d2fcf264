import Foundation
import HTTPDNSCore

/// The zone file's JSON shape, decoded strictly: an object of objects whose members are `A`,
/// `AAAA` (arrays of address strings), `CNAME` (a string) and `ttl` (an integer), in any case.
struct HTTPDNSZoneFile: Decodable {
    static let defaultTTLKey = CodingUserInfoKey(rawValue: "httpdns.defaultTTL")!

    var entries: [String: HTTPDNSZone.Entry] = [:]

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count <= HTTPDNSZone.maxNames else {
            throw HTTPDNSServiceError(.invalidZone, "more than \(HTTPDNSZone.maxNames) names")
        }
        let defaultTTL = decoder.userInfo[Self.defaultTTLKey] as? Int ?? HTTPDNSZone.defaultTTL
        for key in container.allKeys {
            let name = key.stringValue
            let members = try container.nestedContainer(keyedBy: Key.self, forKey: key)
            var entry = HTTPDNSZone.Entry(ttl: defaultTTL)
            for member in members.allKeys {
                switch member.stringValue.lowercased() {
                case "a":
                    entry.ipv4 = try Self.addresses(members, member, name: name, family: .v4)
                case "aaaa":
                    entry.ipv6 = try Self.addresses(members, member, name: name, family: .v6)
                case "cname":
                    entry.cname = try members.decode(String.self, forKey: member)
                case "ttl":
                    // Decoded as a number and checked here, so that `1.5` gets a clear message.
                    let ttl = try members.decode(Double.self, forKey: member)
                    guard ttl.rounded() == ttl, ttl >= 0, ttl <= Double(HTTPDNSFormatLimits.maxTTL) else {
                        throw HTTPDNSServiceError(
                            .invalidZone, "\(HTTPDNSZone.shown(name)): ttl must be an integer 0...\(HTTPDNSFormatLimits.maxTTL)")
                    }
                    entry.ttl = Int(ttl)
                default:
                    throw HTTPDNSServiceError(
                        .invalidZone, "\(HTTPDNSZone.shown(name)): unknown member \(HTTPDNSZone.shown(member.stringValue)) (expected A, AAAA, CNAME, ttl)")
                }
            }
            entries[name] = entry
        }
    }

    private static func addresses(
        _ members: KeyedDecodingContainer<Key>, _ member: Key, name: String, family: HTTPDNSIPAddress.Family
    ) throws -> [HTTPDNSIPAddress] {
        let texts = try members.decode([String].self, forKey: member)
        guard texts.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
            throw HTTPDNSServiceError(.invalidZone, "\(HTTPDNSZone.shown(name)): more than \(HTTPDNSFormatLimits.maxAddressesPerName) addresses")
        }
        var out: [HTTPDNSIPAddress] = []
        for text in texts {
            guard text.utf8.count <= 64, let address = HTTPDNSIPAddress(text), address.family == family else {
                let kind = family == .v4 ? "an IPv4" : "an IPv6"
                throw HTTPDNSServiceError(.invalidZone, "\(HTTPDNSZone.shown(name)): \(HTTPDNSZone.shown(text)) is not \(kind) address")
            }
            out.append(address)
        }
        return out
    }

    /// A short, stable explanation of a decoding failure, naming where it happened.
    static func explain(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue)
            return keys.isEmpty ? "zone file" : keys.map { HTTPDNSZone.shown($0) }.joined(separator: " ")
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)): wrong type (names map to objects; A/AAAA are string arrays, CNAME a string, ttl an integer)"
        case .keyNotFound(_, let context):
            return "\(path(context)): missing member"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "zone file is not valid JSON" : "\(path(context)): invalid value"
        @unknown default:
            return "zone file could not be read"
        }
    }
}
