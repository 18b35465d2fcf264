/// Writing JSON text by hand where member order matters (vendor-exact answers, one-line CLI output).
package enum HTTPDNSJSONText {
    /// A JSON string literal (RFC 8259 §7): quotes, backslashes and control characters escaped.
    package static func quote(_ value: String) -> String {
        let hex = Array("0123456789abcdef".unicodeScalars)
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u00"
                out.unicodeScalars.append(hex[Int(scalar.value >> 4)])
                out.unicodeScalars.append(hex[Int(scalar.value & 0xf)])
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
