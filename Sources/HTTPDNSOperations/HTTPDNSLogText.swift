#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The pieces of a JSON log line that every log here writes the same way (the service's access
/// log, the stub's query log): ASCII-only strings, so that a hostile name can neither break the
/// line nor send terminal escapes to whoever reads the log, and RFC 3339 times.
package enum HTTPDNSLogText {
    /// Longest name written, in Unicode scalars (a DNS name is at most 253 bytes; longer input is
    /// junk and only its start is worth keeping). 300.
    package static let maxNameScalars = 300

    /// The wall clock now, in microseconds since the Unix epoch (`CLOCK_REALTIME`).
    package static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
    }

    /// A JSON string literal in ASCII: `"` and `\` escaped, and every scalar outside printable
    /// ASCII as `\uXXXX` (a surrogate pair above U+FFFF), at most `maxScalars` scalars.
    package static func appendString(_ value: String, to out: inout [UInt8], maxScalars: Int = .max) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        func escape(_ unit: UInt32) {
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u")])
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hex[Int((unit >> UInt32(shift)) & 0xf)]) }
        }
        out.append(UInt8(ascii: "\""))
        var written = 0
        for scalar in value.unicodeScalars {
            guard written < maxScalars else { break }
            written += 1
            switch scalar.value {
            case 0x22, 0x5c:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(scalar.value))
            case 0x20..<0x7f:
                out.append(UInt8(scalar.value))
            case 0x10000...:
                let offset = scalar.value - 0x10000
                escape(0xd800 + (offset >> 10))
                escape(0xdc00 + (offset & 0x3ff))
            default:
                escape(scalar.value)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `YYYY-MM-DDThh:mm:ss.uuuuuuZ` (RFC 3339, UTC), from the proleptic Gregorian calendar
    /// (days-from-civil inverse, valid for every year 0...9999; earlier or later times are clamped).
    package static func appendRFC3339(microseconds: Int64, to out: inout [UInt8]) {
        // 0000-01-01 and 9999-12-31T23:59:59.999999 in Unix microseconds.
        let clamped = min(max(microseconds, -62_167_219_200_000_000), 253_402_300_799_999_999)
        let fraction = Int(((clamped % 1_000_000) + 1_000_000) % 1_000_000)
        let seconds = (clamped - Int64(fraction)) / 1_000_000
        let secondOfDay = Int(((seconds % 86_400) + 86_400) % 86_400)
        let days = (seconds - Int64(secondOfDay)) / 86_400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPart = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthPart + 2) / 5 + 1)
        let month = Int(monthPart < 10 ? monthPart + 3 : monthPart - 9)
        let year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var value = value
            for _ in 0..<count {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                value %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3_600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        out.append(UInt8(ascii: "."))
        digits(fraction, 6)
        out.append(UInt8(ascii: "Z"))
    }
}
