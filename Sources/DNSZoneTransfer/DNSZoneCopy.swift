import DNSWire
import HTTPDNSCore

/// A secondary's zone as kept on disk, so that a restart with the primary unreachable still serves
/// the last good zone (issue 24): the bytes of the file and the checks that read it back.
///
///     swift-httpdns-zone 1 sha256 <64 lower-case hex digits>\n<body>
///
/// The body is the zone as an AXFR stream (RFC 5936): DNS response messages, each behind its
/// two-byte length as on TCP, the SOA first and last. Reading it back runs the same
/// ``DNSZoneTransfer`` a transfer from the primary runs (every message and record checked, the
/// sizes capped by its limits), so a file is trusted no more than the network: one changed byte
/// fails the digest and loads nothing, and a forged file with a valid digest must still be a
/// well-formed zone named as expected.
///
/// When the primary last confirmed the zone is not in the file: like BIND, the secondary sets the
/// file's modification time on every confirmation, so confirming costs no rewrite.
package enum DNSZoneCopy {
    static let magic = "swift-httpdns-zone"
    static let version = 1
    /// Records per message: the messages stay well under 64 KiB in the common case (a message
    /// that does not is split further).
    static let recordsPerMessage = 64

    /// Why a file was refused whole; `reason` is short and free of file contents.
    package struct Rejection: Error, Sendable, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
    }

    /// The file's bytes for `snapshot`.
    ///
    /// - Throws: ``Rejection`` when a record does not encode alone in one message (a record over
    ///   64 KiB, which no transfer can deliver either).
    package static func encode(_ snapshot: DNSZoneSnapshot) throws(Rejection) -> [UInt8] {
        var body: [UInt8] = []
        let records = [snapshot.soaRecord] + snapshot.records + [snapshot.soaRecord]
        var start = 0
        while start < records.count {
            let end = min(start + recordsPerMessage, records.count)
            try append(records[start..<end], zone: snapshot.zone, to: &body)
            start = end
        }
        let digest = HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body))
        return Array("\(magic) \(version) sha256 \(digest)\n".utf8) + body
    }

    /// The zone in a file's `bytes`, which must be `zone`'s.
    ///
    /// - Throws: ``Rejection`` naming the first problem: the header, the digest, a message that does
    ///   not decode, the transfer's own finding (a record out of the zone, a broken SOA pair, the
    ///   limits), or bytes after the zone.
    package static func decode(
        _ bytes: [UInt8], zone: DNSName, limits: DNSZoneTransfer.Limits = DNSZoneTransfer.Limits()
    ) throws(Rejection) -> DNSZoneSnapshot {
        guard let newline = bytes.prefix(128).firstIndex(of: UInt8(ascii: "\n")) else {
            throw Rejection(reason: "no header line")
        }
        let header = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard header.count == 4, header[0] == Substring(magic), header[2] == "sha256", header[3].utf8.count == 64 else {
            throw Rejection(reason: "not a \(magic) file")
        }
        guard header[1] == Substring(String(version)) else { throw Rejection(reason: "version \(header[1]) is not \(version)") }
        let body = Array(bytes[(newline + 1)...])
        guard HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body)) == String(header[3]) else {
            throw Rejection(reason: "the digest does not match: the file is damaged")
        }
        var transfer = DNSZoneTransfer(axfr: zone, id: 0, limits: limits)
        var offset = 0
        while offset < body.count {
            guard body.count - offset >= 2 else { throw Rejection(reason: "a message length is cut short") }
            let length = Int(body[offset]) << 8 | Int(body[offset + 1])
            guard body.count - offset - 2 >= length else { throw Rejection(reason: "a message is cut short") }
            let frame = Array(body[(offset + 2)..<(offset + 2 + length)])
            offset += 2 + length
            let message: DNSMessage
            do {
                message = try DNSMessage(decoding: frame)
            } catch {
                throw Rejection(reason: "a message does not decode: \(error)")
            }
            switch transfer.receive(message, wireSize: length, signature: .none) {
            case .needMore:
                continue
            case .failed(let failure):
                throw Rejection(reason: "\(failure)")
            case .done(let result):
                guard offset == body.count else { throw Rejection(reason: "bytes follow the zone's closing SOA") }
                guard case .full(let snapshot) = result else { throw Rejection(reason: "not a whole zone") }
                return snapshot
            }
        }
        throw Rejection(reason: "the zone ends before its closing SOA")
    }

    /// Appends `records` as one framed message, or as several when one would pass 64 KiB.
    private static func append(_ records: ArraySlice<DNSRecord>, zone: DNSName, to body: inout [UInt8]) throws(Rejection) {
        var message = DNSMessage.response(to: DNSMessage.axfrQuery(zone: zone, id: 0), recursionAvailable: false)
        message.isAuthoritative = true
        message.answers = Array(records)
        let wire: [UInt8]
        do {
            wire = try message.encode()
        } catch {
            guard records.count > 1 else { throw Rejection(reason: "a record of \(records.first?.name.text() ?? "") does not encode: \(error)") }
            return try split(records, zone: zone, to: &body)
        }
        guard wire.count <= Int(UInt16.max) else {
            guard records.count > 1 else { throw Rejection(reason: "a record of \(records.first?.name.text() ?? "") is over 64 KiB") }
            return try split(records, zone: zone, to: &body)
        }
        body.append(UInt8(wire.count >> 8))
        body.append(UInt8(wire.count & 0xff))
        body.append(contentsOf: wire)
    }

    private static func split(_ records: ArraySlice<DNSRecord>, zone: DNSName, to body: inout [UInt8]) throws(Rejection) {
        let middle = records.startIndex + records.count / 2
        try append(records[..<middle], zone: zone, to: &body)
        try append(records[middle...], zone: zone, to: &body)
    }
}
