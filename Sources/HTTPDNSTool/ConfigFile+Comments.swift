import Foundation

extension ConfigFile {
    /// `data` with every `//` line comment outside a string blanked out, so that a config file can
    /// say why each value is there (contrib/httpdns/serve.json.example) and still be read by a
    /// strict JSON parser. Comments become spaces, not nothing, so the parser's positions stay
    /// those of the file. Only line comments: `/* */` stays a JSON syntax error.
    static func strippingLineComments(_ data: Data) -> Data {
        var bytes = [UInt8](data)
        var inString = false
        var escaped = false
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") {
                    bytes[index] = UInt8(ascii: " ")
                    index += 1
                }
                continue
            }
            index += 1
        }
        return Data(bytes)
    }
}
