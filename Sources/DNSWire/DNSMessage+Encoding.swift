extension DNSMessage {
    /// Encodes the message with name compression, for queries and responses alike.
    ///
    /// Owner names and the names inside NS, CNAME, SOA, PTR and MX RDATA are compressed (RFC 1035
    /// §4.1.4); other RDATA is written as is (RFC 3597 §4). The result may exceed 512 bytes: a UDP
    /// server must truncate and set TC itself.
    ///
    /// - Throws: ``DNSWireError`` `.invalidRecord` for an A/AAAA value of the wrong size or a TXT
    ///   string over 255 bytes, `.messageTooLong` for more than 65,535 entries in a section, an RDATA
    ///   over 65,535 bytes or a message over 65,535 bytes (the TCP and DoH limit).
    package func encode() throws -> [UInt8] {
        var writer = DNSWireWriter()
        writer.write(id)
        writer.write(flags)
        for (count, section) in [
            (questions.count, DNSWireError.Section.question), (answers.count, .answer),
            (authorities.count, .authority), (additionals.count, .additional),
        ] {
            guard let value = UInt16(exactly: count) else {
                writer.section = section
                throw writer.error(.messageTooLong)
            }
            writer.write(value)
        }
        writer.section = .question
        for (number, question) in questions.enumerated() {
            writer.index = number + 1
            writer.write(question.name)
            writer.write(question.type.rawValue)
            writer.write(question.recordClass.rawValue)
        }
        for (records, section) in [
            (answers, DNSWireError.Section.answer), (authorities, .authority), (additionals, .additional),
        ] {
            writer.section = section
            for (number, record) in records.enumerated() {
                writer.index = number + 1
                try Self.write(record, into: &writer)
            }
        }
        guard writer.bytes.count <= Int(UInt16.max) else {
            writer.index = nil
            throw writer.error(.messageTooLong)
        }
        return writer.bytes
    }

    private static func write(_ record: DNSRecord, into writer: inout DNSWireWriter) throws {
        writer.field = "name"
        writer.write(record.name)
        writer.write(record.type.rawValue)
        if case .opt(let edns) = record.data {
            writer.write(edns.recordClass)
            writer.write(edns.ttl)
        } else {
            writer.write(record.recordClass.rawValue)
            writer.write(record.ttl)
        }
        writer.field = "rdata"
        let lengthPosition = writer.bytes.count
        writer.write(UInt16(0))
        let start = writer.bytes.count
        switch record.data {
        case .a(let bytes):
            guard bytes.count == 4 else { throw writer.error(.invalidRecord) }
            writer.write(bytes)
        case .aaaa(let bytes):
            guard bytes.count == 16 else { throw writer.error(.invalidRecord) }
            writer.write(bytes)
        case .cname(let name), .ns(let name), .ptr(let name):
            writer.write(name)
        case .mx(let preference, let exchange):
            writer.write(preference)
            writer.write(exchange)
        case .txt(let strings):
            for string in strings {
                guard let count = UInt8(exactly: string.count) else { throw writer.error(.invalidRecord) }
                writer.write(count)
                writer.write(string)
            }
        case .soa(let soa):
            writer.write(soa.primaryServer)
            writer.write(soa.responsible)
            for value in [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum] {
                writer.write(value)
            }
        case .opt(let edns):
            writer.write(edns.options)
        case .opaque(_, let bytes):
            writer.write(bytes)
        }
        guard let length = UInt16(exactly: writer.bytes.count - start) else { throw writer.error(.messageTooLong) }
        writer.patch(length, at: lengthPosition)
        writer.field = nil
    }
}
