import HTTPDNSCore

/// A longest-prefix-match table from IP networks to values: one binary trie per family, its nodes
/// in one flat array each, so that a lookup walks at most 32 or 128 nodes and allocates nothing.
///
/// Besides the value of the longest network holding the address, a lookup gives the **scope**: how
/// many leading bits of the address decide the answer. Every address sharing that many leading bits
/// with the one looked up gets the same value from this table, and that is the longest such prefix
/// the trie can vouch for. It is what an EDNS Client Subnet answer must carry as its SCOPE
/// PREFIX-LENGTH (RFC 7871 §7.2.1: the response "SHOULD … include the longest relevant
/// PREFIX-LENGTH"), so that a cache downstream, which serves the answer to every client inside
/// `address/scope`, never hands a client of a more specific network the answer of the one around it:
///
/// - When nothing more specific lies inside the matched network, the walk ends at the matched node
///   and the scope is the matched prefix length (`10.0.0.0/8` alone: `10.2.3.4` has scope 8).
/// - When a more specific network lies inside (`10.1.0.0/16` within `10.0.0.0/8`), the walk follows
///   the address past the match for as long as the inner networks share its bits, and the scope is
///   one past the node where it leaves them: `10.2.3.4` leaves `10.1.0.0/16`'s path at bit 14, so its
///   scope is 15, and `10.2.0.0/15` holds no address of the inner network.
/// - With no match the same holds, the value being the caller's default (an empty table: scope 0).
///
/// IPv4-mapped IPv6 addresses (`::ffff:10.1.2.3`) are looked up as IPv4; their scope counts IPv4 bits.
@_spi(HTTPDNSPackage) public struct HTTPDNSPrefixTable<Value: Sendable>: Sendable {
    /// One trie node: its two children (0 when absent: the root is never a child) and its value's
    /// index in ``values`` (-1 when no network ends here).
    @usableFromInline struct Node: Sendable {
        @usableFromInline var children: (Int32, Int32) = (0, 0)
        @usableFromInline var value: Int32 = -1

        @usableFromInline init() {}
    }

    /// What a lookup found.
    public struct Match {
        /// The value of the longest network holding the address, nil when none does.
        public var value: Value?
        /// That network's prefix length (0 when none matched).
        public var prefixLength: Int
        /// Leading bits of the address that decide the answer (see the type's documentation).
        public var scope: Int
        /// The family looked up (IPv4 for an IPv4-mapped address).
        public var family: HTTPDNSIPAddress.Family

        @inlinable
        init(value: Value?, prefixLength: Int, scope: Int, family: HTTPDNSIPAddress.Family) {
            self.value = value
            self.prefixLength = prefixLength
            self.scope = scope
            self.family = family
        }
    }

    // Visible to inlined code only (`@usableFromInline`): the views match every query through
    // ``lookup(_:)`` from another module, where the unspecialised generic walk costs every node
    // generic metadata and witness-table calls (bench row 10's profile: 1.4 % of the views
    // server's samples, none in the plain one). The type is public under `@_spi(HTTPDNSPackage)`
    // rather than `package` because Swift 6.3 serialises no body of an `@inlinable package`
    // declaration (see ``LRUTable``); SPI keeps it out of the public API.
    @usableFromInline var ipv4: [Node] = [Node()]
    @usableFromInline var ipv6: [Node] = [Node()]
    @usableFromInline var values: [Value] = []

    /// An empty table.
    package init() {}

    /// Networks in the table (a network added twice counts once).
    package private(set) var count = 0

    /// Adds `network` with `value`; a network already present keeps its value unless
    /// `replaces(value, current)` (by default never: the first value stays, declaration order
    /// breaking ties).
    package mutating func insert(_ network: HTTPDNSNetwork, _ value: Value, replaces: (Value, Value) -> Bool = { _, _ in false }) {
        let isV4 = network.family == .v4
        var nodes = isV4 ? ipv4 : ipv6
        if isV4 { ipv4 = [] } else { ipv6 = [] }  // one reference while growing: no copy on write
        defer { if isV4 { ipv4 = nodes } else { ipv6 = nodes } }
        var node = 0
        for depth in 0..<network.prefixLength {
            let bit = Self.bit(depth, network.high, network.low)
            var next = Int(bit == 0 ? nodes[node].children.0 : nodes[node].children.1)
            if next == 0 {
                next = nodes.count
                nodes.append(Node())
                if bit == 0 { nodes[node].children.0 = Int32(next) } else { nodes[node].children.1 = Int32(next) }
            }
            node = next
        }
        guard nodes[node].value < 0 else {
            let index = Int(nodes[node].value)
            if replaces(value, values[index]) { values[index] = value }
            return
        }
        nodes[node].value = Int32(values.count)
        values.append(value)
        count += 1
    }

    /// The longest match for `address`, its prefix length and the scope (see the type).
    @inlinable
    public func lookup(_ address: HTTPDNSIPAddress) -> Match {
        let address = address.ipv4Mapped ?? address
        let family = address.family
        let (high, low) = address.words
        let bits = family == .v4 ? 32 : 128
        return (family == .v4 ? ipv4 : ipv6).withUnsafeBufferPointer { nodes in
            var node = 0
            var depth = 0
            var found: Int32 = -1
            var foundDepth = 0
            while true {
                let current = nodes[node]
                if current.value >= 0 {
                    found = current.value
                    foundDepth = depth
                }
                let hasChildren = current.children.0 != 0 || current.children.1 != 0
                guard depth < bits, hasChildren else { break }
                let next = Self.bit(depth, high, low) == 0 ? current.children.0 : current.children.1
                guard next != 0 else {
                    // The address leaves every deeper network at this bit: it and the next one decide.
                    depth += 1
                    break
                }
                node = Int(next)
                depth += 1
            }
            return Match(
                value: found >= 0 ? values[Int(found)] : nil, prefixLength: found >= 0 ? foundDepth : 0, scope: depth,
                family: family)
        }
    }

    /// Bit `index` (0 = most significant) of the 128-bit value `high:low`.
    @inlinable @inline(__always)
    static func bit(_ index: Int, _ high: UInt64, _ low: UInt64) -> UInt64 {
        index < 64 ? (high >> UInt64(63 - index)) & 1 : (low >> UInt64(127 - index)) & 1
    }

    /// Trie nodes in use, both families (for memory figures in tests and the bench).
    package var nodeCount: Int { ipv4.count + ipv6.count }
}
