extension DNSMessage {
    /// Decodes a complete message.
    ///
    /// Every length is checked against the bytes present; names follow the rules of
    /// `DNSWireReader.readName()` (strictly backward pointers, labels ≤ 63, names ≤ 255); the RDATA
    /// of known types must fill RDLENGTH exactly (A is 4 bytes, AAAA 16). Bytes after the last
    /// announced record are an error, as a DoH body or TCP frame holds exactly one message.
    ///
    /// - Throws: ``DNSWireError`` with the offset, section, record index and field.
    package init(decoding bytes: [UInt8]) throws {
        self = try Self.decode(bytes).message
    }

    /// Decodes `bytes` and also returns where the last additional record starts, for TSIG.
    static func decode(_ bytes: [UInt8]) throws -> (message: DNSMessage, lastAdditionalOffset: Int?) {
        var reader = DNSWireReader(bytes)
        reader.field = "header"
        let id = try reader.readUInt16()
        let flags = try reader.readUInt16()
        let questionCount = Int(try reader.readUInt16())
        let answerCount = Int(try reader.readUInt16())
        let authorityCount = Int(try reader.readUInt16())
        let additionalCount = Int(try reader.readUInt16())

        var questions: [DNSQuestion] = []
        // Capacity from what the bytes can hold, never from the (hostile) counts alone.
        questions.reserveCapacity(min(questionCount, reader.remaining / 5))
        reader.section = .question
        for number in 0..<questionCount {
            reader.index = number + 1
            reader.field = "name"
            let name = try reader.readName()
            reader.field = "type"
            let type = DNSRecordType(try reader.readUInt16())
            reader.field = "class"
            let recordClass = DNSRecordClass(try reader.readUInt16())
            questions.append(DNSQuestion(name: name, type: type, recordClass: recordClass))
        }
        let answers = try Self.readRecords(&reader, count: answerCount, section: .answer)
        let authorities = try Self.readRecords(&reader, count: authorityCount, section: .authority)
        var lastAdditionalOffset: Int?
        let additionals = try Self.readRecords(
            &reader, count: additionalCount, section: .additional, lastOffset: &lastAdditionalOffset
        )
        if reader.remaining > 0 {
            reader.index = nil
            reader.field = nil
            throw reader.error(.trailingData)
        }
        let message = DNSMessage(
            id: id, flags: flags, questions: questions, answers: answers, authorities: authorities,
            additionals: additionals
        )
        return (message, lastAdditionalOffset)
    }

    private static func readRecords(
        _ reader: inout DNSWireReader, count: Int, section: DNSWireError.Section
    ) throws -> [DNSRecord] {
        var lastOffset: Int?
        return try readRecords(&reader, count: count, section: section, lastOffset: &lastOffset)
    }

    private static func readRecords(
        _ reader: inout DNSWireReader, count: Int, section: DNSWireError.Section, lastOffset: inout Int?
    ) throws -> [DNSRecord] {
        reader.section = section
        var records: [DNSRecord] = []
        records.reserveCapacity(min(count, reader.remaining / 11))
        for number in 0..<count {
            reader.index = number + 1
            lastOffset = reader.offset
            records.append(try readRecord(&reader))
        }
        return records
    }

    private static func readRecord(_ reader: inout DNSWireReader) throws -> DNSRecord {
        reader.field = "name"
        let name = try reader.readName()
        reader.field = "type"
        let type = DNSRecordType(try reader.readUInt16())
        reader.field = "class"
        let recordClass = try reader.readUInt16()
        reader.field = "ttl"
        let ttl = try reader.readUInt32()
        reader.field = "rdlength"
        let length = Int(try reader.readUInt16())
        reader.field = "rdata"
        let start = reader.offset
        guard length <= reader.remaining else { throw reader.error(.truncated, at: reader.bytes.count) }
        let end = start + length
        let data = try readData(&reader, type: type, length: length, recordClass: recordClass, ttl: ttl)
        // Names inside RDATA are read by the same reader; they must end exactly at RDLENGTH.
        if reader.offset != end { throw reader.error(.badRdataLength, at: start) }
        return DNSRecord(name: name, recordClass: DNSRecordClass(recordClass), ttl: ttl, data: data)
    }

    private static func readData(
        _ reader: inout DNSWireReader, type: DNSRecordType, length: Int, recordClass: UInt16, ttl: UInt32
    ) throws -> DNSRecordData {
        let start = reader.offset
        let end = start + length
        func rdataName() throws -> DNSName {
            let name = try reader.readName()
            if reader.offset > end { throw reader.error(.badRdataLength, at: start) }
            return name
        }
        switch type {
        case .A:
            guard length == 4 else { throw reader.error(.badRdataLength, at: start) }
            return .a(try reader.readBytes(4))
        case .AAAA:
            guard length == 16 else { throw reader.error(.badRdataLength, at: start) }
            return .aaaa(try reader.readBytes(16))
        case .CNAME:
            return .cname(try rdataName())
        case .NS:
            return .ns(try rdataName())
        case .PTR:
            return .ptr(try rdataName())
        case .MX:
            guard length >= 3 else { throw reader.error(.badRdataLength, at: start) }
            let preference = try reader.readUInt16()
            return .mx(preference: preference, exchange: try rdataName())
        case .TXT:
            var strings: [[UInt8]] = []
            while reader.offset < end {
                let count = Int(try reader.readUInt8())
                guard reader.offset + count <= end else { throw reader.error(.badRdataLength, at: start) }
                strings.append(try reader.readBytes(count))
            }
            return .txt(strings)
        case .SOA:
            let primary = try rdataName()
            let responsible = try rdataName()
            guard end - reader.offset == 20 else { throw reader.error(.badRdataLength, at: start) }
            return .soa(DNSSOA(
                primaryServer: primary, responsible: responsible, serial: try reader.readUInt32(),
                refresh: try reader.readUInt32(), retry: try reader.readUInt32(), expire: try reader.readUInt32(),
                minimum: try reader.readUInt32()
            ))
        case .OPT:
            return .opt(DNSEDNS(recordClass: recordClass, ttl: ttl, options: try reader.readBytes(length)))
        default:
            return .opaque(type, try reader.readBytes(length))
        }
    }
}
