/// The RDATA of a TSIG record (RFC 8945 §4.2), with its owner name (the key name).
///
/// The decoder keeps TSIG RDATA as ``DNSRecordData/opaque(_:_:)``; this value reads and writes its
/// fields. The algorithm name is never compressed (RFC 8945 §4.2), so the RDATA can be parsed on its
/// own, without the rest of the message.
package struct DNSTSIGRecord: Sendable, Hashable {
    /// The name of the key, the record's owner.
    package var keyName: DNSName
    /// The MAC algorithm, as a name (`hmac-sha256.`).
    package var algorithm: DNSName
    /// Seconds since 1970-01-01 UTC, 48 bits on the wire.
    package var timeSigned: UInt64
    /// Permitted error in ``timeSigned``, in seconds (RFC 8945 §10 recommends 300).
    package var fudge: UInt16
    package var mac: [UInt8]
    /// The message ID before any forwarder changed it (RFC 8945 §4.2).
    package var originalID: UInt16
    /// The extended RCODE of a TSIG failure: 0, or BADSIG 16, BADKEY 17, BADTIME 18, BADTRUNC 22.
    package var error: UInt16
    /// Empty, except for BADTIME responses, where it holds the server's time (RFC 8945 §5.2.3).
    package var otherData: [UInt8]

    /// The largest value Time Signed can hold (48 bits).
    package static let maxTime: UInt64 = (1 << 48) - 1

    package init(
        keyName: DNSName, algorithm: DNSName, timeSigned: UInt64, fudge: UInt16, mac: [UInt8],
        originalID: UInt16, error: UInt16 = 0, otherData: [UInt8] = []
    ) {
        self.keyName = keyName
        self.algorithm = algorithm
        self.timeSigned = timeSigned
        self.fudge = fudge
        self.mac = mac
        self.originalID = originalID
        self.error = error
        self.otherData = otherData
    }

    /// Reads the TSIG fields from a decoded record.
    ///
    /// - Throws: ``DNSWireError`` `.invalidRecord` when `record` is not a TSIG record of class ANY
    ///   and TTL 0 (RFC 8945 §4.2), `.truncated` or `.badRdataLength` when its RDATA is malformed.
    package init(_ record: DNSRecord) throws {
        guard record.type == .TSIG, case .opaque(_, let rdata) = record.data,
              record.recordClass == .ANY, record.ttl == 0
        else { throw DNSWireError(.invalidRecord, offset: 0, section: .additional, field: "tsig") }
        var reader = DNSWireReader(rdata)
        reader.section = .additional
        reader.field = "tsig algorithm"
        let algorithm = try reader.readName()
        reader.field = "tsig time"
        let time = UInt64(try reader.readUInt16()) << 32 | UInt64(try reader.readUInt32())
        reader.field = "tsig fudge"
        let fudge = try reader.readUInt16()
        reader.field = "tsig mac"
        let mac = try reader.readBytes(Int(try reader.readUInt16()))
        reader.field = "tsig original id"
        let originalID = try reader.readUInt16()
        reader.field = "tsig error"
        let error = try reader.readUInt16()
        reader.field = "tsig other data"
        let other = try reader.readBytes(Int(try reader.readUInt16()))
        if reader.remaining > 0 { throw reader.error(.badRdataLength) }
        self.init(
            keyName: record.name, algorithm: algorithm, timeSigned: time, fudge: fudge, mac: mac,
            originalID: originalID, error: error, otherData: other
        )
    }

    /// The RDATA on the wire, names uncompressed.
    ///
    /// ``timeSigned`` is cut to 48 bits; a MAC or other data over 65,535 bytes is cut too (neither
    /// can happen with the HMAC-SHA256 this package signs with).
    package var rdata: [UInt8] {
        var writer = DNSWireWriter()
        writer.write(algorithm, compress: false)
        writer.write(UInt16(truncatingIfNeeded: timeSigned >> 32))
        writer.write(UInt32(truncatingIfNeeded: timeSigned))
        writer.write(fudge)
        writer.write(UInt16(truncatingIfNeeded: mac.count))
        writer.write(Array(mac.prefix(Int(UInt16.max))))
        writer.write(originalID)
        writer.write(error)
        writer.write(UInt16(truncatingIfNeeded: otherData.count))
        writer.write(Array(otherData.prefix(Int(UInt16.max))))
        return writer.bytes
    }

    /// The record for the additional section: class ANY, TTL 0 (RFC 8945 §4.2).
    package var record: DNSRecord {
        DNSRecord(name: keyName, recordClass: .ANY, ttl: 0, data: .opaque(.TSIG, rdata))
    }

    /// The whole resource record on the wire, owner name uncompressed, for appending to a message.
    package var wireRecord: [UInt8] {
        var writer = DNSWireWriter()
        writer.write(keyName, compress: false)
        writer.write(DNSRecordType.TSIG.rawValue)
        writer.write(DNSRecordClass.ANY.rawValue)
        writer.write(UInt32(0))
        let rdata = rdata
        writer.write(UInt16(truncatingIfNeeded: rdata.count))
        writer.write(rdata)
        return writer.bytes
    }

    /// The TSIG variables of RFC 8945 §4.3.3, the part of the MAC input after the message.
    ///
    /// Names are in canonical form (lower case, uncompressed). With `timersOnly` only Time Signed and
    /// Fudge are included, as for the second and later signed messages of a stream (§5.3.1).
    package func digestVariables(timersOnly: Bool = false) -> [UInt8] {
        var writer = DNSWireWriter()
        if !timersOnly {
            writer.write(keyName.canonicalWireForm)
            writer.write(DNSRecordClass.ANY.rawValue)
            writer.write(UInt32(0))
            writer.write(algorithm.canonicalWireForm)
        }
        writer.write(UInt16(truncatingIfNeeded: timeSigned >> 32))
        writer.write(UInt32(truncatingIfNeeded: timeSigned))
        writer.write(fudge)
        if !timersOnly {
            writer.write(error)
            writer.write(UInt16(truncatingIfNeeded: otherData.count))
            writer.write(otherData)
        }
        return writer.bytes
    }
}

extension DNSName {
    /// The uncompressed wire form in lower case, as DNSSEC and TSIG digest names (RFC 4034 §6.2).
    package var canonicalWireForm: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(wireLength)
        for label in labels {
            bytes.append(UInt8(label.count))
            bytes.append(contentsOf: Self.lowercased(label))
        }
        bytes.append(0)
        return bytes
    }
}
