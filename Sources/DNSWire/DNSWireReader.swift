/// A bounds-checked cursor over a DNS message.
///
/// Every read checks the remaining length first and throws ``DNSWireError`` with the current
/// section, record index and field, so a malformed message can never read out of bounds.
struct DNSWireReader {
    let bytes: [UInt8]
    /// The next byte to read.
    private(set) var offset: Int
    /// Context for errors.
    var section: DNSWireError.Section = .header
    var index: Int?
    var field: String?

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    var remaining: Int { bytes.count - offset }

    func error(_ code: DNSWireError.Code, at position: Int? = nil) -> DNSWireError {
        DNSWireError(code, offset: position ?? offset, section: section, index: index, field: field)
    }

    private func need(_ count: Int) throws {
        if count > remaining { throw error(.truncated, at: bytes.count) }
    }

    mutating func readUInt8() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt32() throws -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    mutating func readBytes(_ count: Int) throws -> [UInt8] {
        try need(count)
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Reads a possibly compressed name (RFC 1035 §4.1.4).
    ///
    /// Each pointer must point strictly before the lowest offset this name has read so far, so the
    /// walk always moves towards the start of the message: loops and forward pointers are rejected
    /// rather than detected after the fact. The number of pointers is capped as well, so a chain of
    /// pointers costs at most ~128 steps per name.
    mutating func readName() throws -> DNSName {
        var labels: [[UInt8]] = []
        var wireLength = 1
        var position = offset
        var lowest = offset
        var jumped = false
        var pointers = 0
        while true {
            guard position < bytes.count else { throw error(.truncated, at: bytes.count) }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    if !jumped { offset = position + 1 }
                    return DNSName(uncheckedLabels: labels)
                }
                let count = Int(length)
                wireLength += 1 + count
                if wireLength > DNSName.maxWireLength { throw error(.nameTooLong, at: position) }
                guard position + 1 + count <= bytes.count else { throw error(.truncated, at: bytes.count) }
                labels.append(Array(bytes[(position + 1)...(position + count)]))
                position += 1 + count
            case 0xC0:
                guard position + 1 < bytes.count else { throw error(.truncated, at: bytes.count) }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < lowest else { throw error(.badPointer, at: position) }
                pointers += 1
                if pointers > DNSName.maxWireLength / 2 { throw error(.tooManyPointers, at: position) }
                if !jumped {
                    offset = position + 2
                    jumped = true
                }
                lowest = target
                position = target
            default:
                throw error(.badLabelType, at: position)
            }
        }
    }
}
