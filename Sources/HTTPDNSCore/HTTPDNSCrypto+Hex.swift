extension HTTPDNSCrypto {
    /// Lower-case hexadecimal text of `bytes`.
    package static func hexEncode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hexadecimal text strictly: an even number of `0-9a-fA-F` characters, nothing else
    /// (no whitespace, no `0x` prefix), so that a tampered answer is an error, not a guess.
    ///
    /// - Throws: `.malformedAnswer` for odd length or any other character.
    package static func hexDecode(_ text: String) throws(HTTPDNSError) -> [UInt8] {
        try hexDecode(Array(text.utf8))
    }

    /// Decodes hexadecimal UTF-8 bytes strictly; see the `String` overload.
    package static func hexDecode(_ text: [UInt8]) throws(HTTPDNSError) -> [UInt8] {
        guard text.count % 2 == 0 else { throw HTTPDNSError.malformed("hex text has odd length") }
        var out = [UInt8]()
        out.reserveCapacity(text.count / 2)
        var index = 0
        while index < text.count {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else {
                throw HTTPDNSError.malformed("hex text has a non-hex character")
            }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
