/// HTML text escaping for the operator console (``HTTPDNSStatusPage``).
///
/// Everything the console prints comes from outside at some point (zone names, check paths, view
/// names, hosts that clients reported, upstream texts from the command line), so every value goes
/// through ``escaped(_:)`` before it reaches the page: nothing printed can open a tag, close an
/// attribute or start an entity.
package enum HTTPDNSHTML {
    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references (the five characters
    /// that can change how HTML around a value is read, in element content and in quoted attributes
    /// alike), and every control character but tab and newline by U+FFFD.
    package static func escaped(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            case "\t", "\n": out.append(scalar)
            // A NUL or another C0/C1 control is a parse error in HTML and means nothing to an operator.
            case _ where scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value): out.append("\u{FFFD}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}
