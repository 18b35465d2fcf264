/// A zone's SOA serial number with the wrap-around arithmetic of RFC 1982 (SERIAL_BITS = 32).
///
/// Serials are not totally ordered: two serials exactly 2^31 apart compare as neither less nor
/// greater (RFC 1982 §3.2), so `DNSSerial` is deliberately not `Comparable`; ``compare(_:)`` says
/// ``Order/undefined`` for that pair and callers must treat it as "not newer".
package struct DNSSerial: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// How two serials compare under RFC 1982 §3.2.
    package enum Order: Sendable, Hashable {
        case less
        case equal
        case greater
        /// The serials are exactly 2^31 apart; RFC 1982 leaves the comparison undefined.
        case undefined
    }

    /// The largest increment RFC 1982 §3.1 allows in one step: 2^31 − 1.
    package static let maxIncrement: UInt32 = (1 << 31) - 1

    package var rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// Compares `self` with `other` (RFC 1982 §3.2).
    ///
    /// `self` is less than `other` when `other` lies 1 to 2^31 − 1 steps ahead of it on the circle
    /// of 2^32 values, greater when `self` lies that far ahead of `other`.
    package func compare(_ other: DNSSerial) -> Order {
        if rawValue == other.rawValue { return .equal }
        let ahead = other.rawValue &- rawValue
        if ahead == 1 << 31 { return .undefined }
        return ahead < 1 << 31 ? .less : .greater
    }

    /// True when `other` is defined and newer than `self`.
    package func isLess(than other: DNSSerial) -> Bool { compare(other) == .less }

    /// True when `self` is defined and newer than `other`.
    package func isGreater(than other: DNSSerial) -> Bool { compare(other) == .greater }

    /// `self + increment` modulo 2^32 (RFC 1982 §3.1).
    ///
    /// - Returns: `nil` when `increment` exceeds ``maxIncrement``, which RFC 1982 leaves undefined.
    package func adding(_ increment: UInt32) -> DNSSerial? {
        guard increment <= Self.maxIncrement else { return nil }
        return DNSSerial(rawValue &+ increment)
    }

    package var description: String { String(rawValue) }
}

extension DNSSOA {
    /// ``serial`` with RFC 1982 arithmetic.
    package var serialNumber: DNSSerial { DNSSerial(serial) }
}
