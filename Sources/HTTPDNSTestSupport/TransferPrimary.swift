import Foundation
import HTTPDNSCore

/// A real primary that a test follows with `httpdns serve --secondary`: Knot (``KnotServer``) or
/// BIND (``NamedServer``), driven the same way so that one test runs against both.
///
/// Each serves one zone on 127.0.0.1 with transfers (and NOTIFY, and changes) signed by one
/// HMAC-SHA256 key, keeps the changes in a journal it serves IXFR from, and logs what it does.
package protocol TransferPrimary: AnyObject, Sendable {
    /// The zone's apex, without the final dot.
    var zone: String { get }
    var address: HTTPDNSIPAddress { get }
    /// The TCP and UDP port it answers on; kept across ``restart(serial:records:)``.
    var port: UInt16 { get }
    /// The transfer key's name and base64 secret.
    var keyName: String { get }
    var keySecret: String { get }
    /// What it has logged so far.
    var log: String { get }
    /// How many outgoing IXFR its log shows (sessions started).
    var outgoingIXFRCount: Int { get }

    /// One committed change: `set` lines added and `unset` lines removed (`owner ttl TYPE data`,
    /// owner relative to the zone); the primary raises the serial and sends its NOTIFY.
    ///
    /// - Returns: when the committing command was started, the start of the change's propagation.
    @discardableResult
    func change(set: [String], unset: [String]) throws -> ContinuousClock.Instant

    /// Sends NOTIFY, signed with the key, to these UDP ports on 127.0.0.1 (replacing the earlier
    /// list) for the changes from now on.
    func reconfigure(notify ports: [UInt16]) throws

    /// Starts over on the same port with a new zone file (`records` under an SOA of `serial`) and no
    /// journal, as a primary restored from a backup is.
    func restart(serial: UInt32, records: [String]) throws

    func stop()
}

extension TransferPrimary {
    /// The key as `tsig-keygen` writes it (what `httpdns serve --tsig-file` reads).
    package var keyFileText: String {
        "key \"\(keyName)\" {\n\talgorithm hmac-sha256;\n\tsecret \"\(keySecret)\";\n};\n"
    }

    /// A fresh HMAC-SHA256 secret (32 random bytes, base64).
    package static func randomSecret() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    /// The zone file both primaries load: `records` under an SOA and an NS.
    static func zoneFile(zone: String, serial: UInt32, refresh: UInt32, retry: UInt32, expire: UInt32, records: [String]) -> String {
        (["$ORIGIN \(zone).", "$TTL 300", "@ 3600 SOA ns1 hostmaster \(serial) \(refresh) \(retry) \(expire) 30", "@ 3600 NS ns1", "ns1 A 192.0.2.53"]
            + records).joined(separator: "\n") + "\n"
    }
}
