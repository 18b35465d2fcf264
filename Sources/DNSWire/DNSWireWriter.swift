/// Builds a DNS message, compressing names against those already written (RFC 1035 §4.1.4).
///
/// Compression targets are remembered by the lower-cased labels of each suffix, so `WWW.Example.com`
/// may point at an earlier `example.COM`; pointers only reach the first 16 KiB (14-bit offsets).
struct DNSWireWriter {
    private(set) var bytes: [UInt8] = []
    private var suffixes: [[[UInt8]]: Int] = [:]
    var section: DNSWireError.Section = .header
    var index: Int?
    var field: String?

    init() {
        bytes.reserveCapacity(512)
    }

    func error(_ code: DNSWireError.Code) -> DNSWireError {
        DNSWireError(code, offset: bytes.count, section: section, index: index, field: field)
    }

    mutating func write(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func write(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func write(_ value: UInt32) {
        write(UInt16(value >> 16))
        write(UInt16(truncatingIfNeeded: value))
    }

    mutating func write(_ data: [UInt8]) {
        bytes.append(contentsOf: data)
    }

    /// Overwrites a 16-bit value written earlier (RDLENGTH once the RDATA is known).
    mutating func patch(_ value: UInt16, at position: Int) {
        bytes[position] = UInt8(value >> 8)
        bytes[position + 1] = UInt8(truncatingIfNeeded: value)
    }

    /// Writes `name`, ending in a pointer to an earlier copy of its longest known suffix.
    ///
    /// - Parameter compress: false for names in RDATA of types not listed in RFC 1035 (RFC 3597 §4).
    mutating func write(_ name: DNSName, compress: Bool = true) {
        let folded = name.lowercasedLabels
        for start in folded.indices {
            let suffix = Array(folded[start...])
            if compress, let target = suffixes[suffix] {
                write(UInt16(0xC000) | UInt16(target))
                return
            }
            if bytes.count < 0x4000, suffixes[suffix] == nil {
                suffixes[suffix] = bytes.count
            }
            let label = name.labels[start]
            write(UInt8(label.count))
            write(label)
        }
        write(UInt8(0))
    }
}
