import Foundation
import HTTPDNSCore

/// Writes small MaxMind DB files (format 2.0, as MaxMind documents it at
/// https://maxmind.github.io/MaxMind-DB/), so that tests build the country and ASN databases they
/// read through libmaxminddb instead of shipping MaxMind's.
///
/// The file is an IPv6 search tree (IPv4 networks live under `::/96`, as in MaxMind's own
/// databases) of 24- or 28-bit records, the 16-byte separator, a data section of the records'
/// values (maps, UTF-8 strings, unsigned integers, arrays; each distinct value written once), and
/// the metadata map after `\xAB\xCD\xEFMaxMind.com`.
package struct MMDBWriter {
    /// A value in the data section.
    package indirect enum Value: Hashable {
        case string(String)
        case uint16(UInt16)
        case uint32(UInt32)
        case uint64(UInt64)
        case map([(String, Value)])
        case array([Value])

        package static func == (lhs: Value, rhs: Value) -> Bool { lhs.encoded == rhs.encoded }
        package func hash(into hasher: inout Hasher) { hasher.combine(encoded) }

        /// The value in the data section's encoding (no pointers).
        var encoded: [UInt8] {
            var out: [UInt8] = []
            MMDBWriter.encode(self, into: &out)
            return out
        }
    }

    /// A country database record: `{"country": {"iso_code": code}}`.
    package static func country(_ code: String) -> Value { .map([("country", .map([("iso_code", .string(code))]))]) }
    /// An ASN database record: `{"autonomous_system_number": asn, "autonomous_system_organization": name}`.
    package static func asn(_ number: UInt32, _ organization: String = "Test AS") -> Value {
        .map([("autonomous_system_number", .uint32(number)), ("autonomous_system_organization", .string(organization))])
    }

    private final class Node {
        var children: [Node?] = [nil, nil]
        var data: Value?
    }

    /// Bits per search-tree record: 24 or 28. Default 24.
    package var recordSize = 24
    /// The metadata's `database_type`. Default `HTTPDNS-Test`.
    package var databaseType = "HTTPDNS-Test"
    private let root = Node()

    package init(recordSize: Int = 24) {
        self.recordSize = recordSize
    }

    /// Gives `network` (`10.0.0.0/8`, `2001:db8::/32`; IPv4 goes under `::/96`) the record `value`;
    /// a more specific network inserted later keeps its own record inside it.
    package mutating func insert(_ network: String, _ value: Value) {
        let parts = network.split(separator: "/")
        let address = HTTPDNSIPAddress(String(parts[0]))!
        let isV4 = address.family == .v4
        let length = (parts.count > 1 ? Int(parts[1])! : (isV4 ? 32 : 128)) + (isV4 ? 96 : 0)
        let bytes = isV4 ? [UInt8](repeating: 0, count: 12) + address.bytes : address.bytes
        var node = root
        for depth in 0..<length {
            let bit = Int(bytes[depth / 8] >> UInt8(7 - depth % 8)) & 1
            if node.children[bit] == nil { node.children[bit] = Node() }
            node = node.children[bit]!
        }
        node.data = value
    }

    /// The whole file.
    package func encode(buildEpoch: UInt64 = 1_767_225_600) -> [UInt8] {
        // Tree nodes: the root and every trie node with children; a trie node without children is
        // a record (its data, or its nearest ancestor's, or none).
        var nodes: [Node] = []
        var ids: [ObjectIdentifier: Int] = [:]
        func number(_ node: Node) {
            ids[ObjectIdentifier(node)] = nodes.count
            nodes.append(node)
            for child in node.children.compactMap({ $0 }) where child.children.contains(where: { $0 != nil }) { number(child) }
        }
        number(root)
        let nodeCount = nodes.count
        var data: [UInt8] = []
        var offsets: [Value: Int] = [:]
        func dataRecord(_ value: Value) -> Int {
            if let offset = offsets[value] { return nodeCount + 16 + offset }
            let offset = data.count
            Self.encode(value, into: &data)
            offsets[value] = offset
            return nodeCount + 16 + offset
        }
        var inherited: [ObjectIdentifier: Value?] = [ObjectIdentifier(root): root.data]
        var tree: [UInt8] = []
        for node in nodes {
            let above = inherited[ObjectIdentifier(node)] ?? nil
            var records: [Int] = []
            for child in node.children {
                guard let child else {
                    records.append(above.map(dataRecord) ?? nodeCount)
                    continue
                }
                let value = child.data ?? above
                if let id = ids[ObjectIdentifier(child)] {
                    inherited[ObjectIdentifier(child)] = value
                    records.append(id)
                } else {
                    records.append(value.map(dataRecord) ?? nodeCount)
                }
            }
            tree += Self.node(records[0], records[1], recordSize: recordSize)
        }
        let metadata: Value = .map([
            ("binary_format_major_version", .uint16(2)),
            ("binary_format_minor_version", .uint16(0)),
            ("build_epoch", .uint64(buildEpoch)),
            ("database_type", .string(databaseType)),
            ("description", .map([("en", .string("swift-httpdns test database"))])),
            ("ip_version", .uint16(6)),
            ("languages", .array([.string("en")])),
            ("node_count", .uint32(UInt32(nodeCount))),
            ("record_size", .uint16(UInt16(recordSize))),
        ])
        return tree + [UInt8](repeating: 0, count: 16) + data + [0xab, 0xcd, 0xef] + Array("MaxMind.com".utf8) + metadata.encoded
    }

    /// Writes ``encode(buildEpoch:)`` to `path`.
    package func write(to path: String) throws {
        try Data(encode()).write(to: URL(fileURLWithPath: path))
    }

    /// One search-tree node of two records.
    private static func node(_ left: Int, _ right: Int, recordSize: Int) -> [UInt8] {
        func bytes(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        if recordSize == 24 { return bytes(left, 3) + bytes(right, 3) }
        // 28 bits: the middle byte holds the left record's top nibble, then the right one's.
        let middle = UInt8(truncatingIfNeeded: (left >> 24) << 4 | (right >> 24) & 0x0f)
        return bytes(left & 0xff_ffff, 3) + [middle] + bytes(right & 0xff_ffff, 3)
    }

    /// The control byte (type, size) and the extended type and size bytes that follow it.
    private static func control(type: Int, size: Int, into out: inout [UInt8]) {
        let sizeBits: Int
        var extra: [UInt8] = []
        switch size {
        case ..<29: sizeBits = size
        case ..<285:
            sizeBits = 29
            extra = [UInt8(size - 29)]
        case ..<65_821:
            sizeBits = 30
            extra = [UInt8((size - 285) >> 8), UInt8((size - 285) & 0xff)]
        default:
            sizeBits = 31
            let rest = size - 65_821
            extra = [UInt8(rest >> 16), UInt8((rest >> 8) & 0xff), UInt8(rest & 0xff)]
        }
        if type <= 7 {
            out.append(UInt8(type << 5 | sizeBits))
        } else {
            out.append(UInt8(sizeBits))
            out.append(UInt8(type - 7))
        }
        out += extra
    }

    static func encode(_ value: Value, into out: inout [UInt8]) {
        func unsigned(_ type: Int, _ number: UInt64) {
            var bytes: [UInt8] = []
            var rest = number
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xff), at: 0)
                rest >>= 8
            }
            control(type: type, size: bytes.count, into: &out)
            out += bytes
        }
        switch value {
        case .string(let text):
            control(type: 2, size: text.utf8.count, into: &out)
            out += Array(text.utf8)
        case .uint16(let number): unsigned(5, UInt64(number))
        case .uint32(let number): unsigned(6, UInt64(number))
        case .uint64(let number): unsigned(9, number)
        case .map(let pairs):
            control(type: 7, size: pairs.count, into: &out)
            for (key, item) in pairs {
                encode(.string(key), into: &out)
                encode(item, into: &out)
            }
        case .array(let items):
            control(type: 11, size: items.count, into: &out)
            for item in items { encode(item, into: &out) }
        }
    }
}
