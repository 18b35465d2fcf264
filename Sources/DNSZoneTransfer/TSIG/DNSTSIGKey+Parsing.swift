import DNSWire
import Foundation

extension DNSTSIGKey {
    /// Parses a key in the command-line form of `dig -y`, `kdig -y` and `knsupdate -y`.
    ///
    /// Accepted: `hmac-sha256:name:secret` (the tools' `[alg:]name:key`), `name:hmac-sha256:secret`
    /// (the order some configuration files use) and `name:secret` (HMAC-SHA256, kdig's default).
    /// When both of the first two fields are algorithm names, the first is the algorithm, as in dig.
    ///
    /// - Throws: `.invalidKey` for a wrong shape, a bad name or bad base64; `.unsupportedAlgorithm`
    ///   for another HMAC.
    package init(commandLine text: String) throws(DNSTSIGError) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
            .map(String.init)
        let nameText: String
        let algorithm: Algorithm
        switch parts.count {
        case 2:
            nameText = parts[0]
            algorithm = .hmacSHA256
        case 3:
            if Self.looksLikeAlgorithm(parts[0]) {
                algorithm = try Algorithm(name: parts[0])
                nameText = parts[1]
            } else if Self.looksLikeAlgorithm(parts[1]) {
                algorithm = try Algorithm(name: parts[1])
                nameText = parts[0]
            } else {
                throw DNSTSIGError(.invalidKey, "no algorithm in name:algorithm:secret")
            }
        default:
            throw DNSTSIGError(.invalidKey, "expected [algorithm:]name:secret")
        }
        try self.init(name: Self.keyName(nameText), algorithm: algorithm, secret: Self.base64(parts[parts.count - 1]))
    }

    /// Parses every `key` clause of BIND's named.conf syntax (as `tsig-keygen` prints them):
    ///
    ///     key "xfr.example." {
    ///         algorithm hmac-sha256;
    ///         secret "c2VjcmV0...";
    ///     };
    ///
    /// Names may be quoted or not; `#`, `//` and `/* */` comments are skipped. Nothing but key
    /// clauses may appear.
    ///
    /// - Throws: `.invalidKey` for any other syntax, a clause without `algorithm` or `secret`, or no
    ///   clause at all; `.unsupportedAlgorithm` for another HMAC.
    package static func parseBINDKeys(_ text: String) throws(DNSTSIGError) -> [DNSTSIGKey] {
        var tokens = try BINDTokens(text)
        var keys: [DNSTSIGKey] = []
        while let word = tokens.next() {
            guard word == .word("key") else { throw DNSTSIGError(.invalidKey, "expected `key`, found \(word)") }
            guard case .word(let nameText)? = tokens.next() else { throw DNSTSIGError(.invalidKey, "key without a name") }
            try tokens.expect(.open)
            var algorithm: Algorithm?
            var secret: [UInt8]?
            while true {
                guard let token = tokens.next() else { throw DNSTSIGError(.invalidKey, "unterminated key clause") }
                if token == .close { break }
                guard case .word(let statement) = token, case .word(let value)? = tokens.next() else {
                    throw DNSTSIGError(.invalidKey, "bad statement in key \(nameText)")
                }
                try tokens.expect(.semicolon)
                switch statement.lowercased() {
                case "algorithm" where algorithm == nil: algorithm = try Algorithm(name: value)
                case "secret" where secret == nil: secret = try base64(value)
                default: throw DNSTSIGError(.invalidKey, "unexpected `\(statement)` in key \(nameText)")
                }
            }
            try tokens.expect(.semicolon)
            guard let algorithm, let secret else {
                throw DNSTSIGError(.invalidKey, "key \(nameText) needs both algorithm and secret")
            }
            keys.append(try DNSTSIGKey(name: keyName(nameText), algorithm: algorithm, secret: secret))
        }
        guard !keys.isEmpty else { throw DNSTSIGError(.invalidKey, "no key clause") }
        return keys
    }

    private static func looksLikeAlgorithm(_ text: String) -> Bool {
        var lower = text.lowercased()
        if lower.hasSuffix(".") { lower.removeLast() }
        return Algorithm.knownNames.contains(lower)
    }

    private static func keyName(_ text: String) throws(DNSTSIGError) -> DNSName {
        let name: DNSName
        do { name = try DNSName(text) } catch { throw DNSTSIGError(.invalidKey, "bad key name \(text)") }
        guard !name.isRoot else { throw DNSTSIGError(.invalidKey, "key name is the root") }
        return name
    }

    /// Strict base64 (RFC 4648 §4, padding required), as BIND and Knot write secrets.
    private static func base64(_ text: String) throws(DNSTSIGError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw DNSTSIGError(.invalidKey, "secret is not base64") }
        return Array(data)
    }
}

/// The tokens of named.conf's syntax that a key clause uses.
private struct BINDTokens {
    enum Token: Equatable, CustomStringConvertible {
        case word(String)
        case open
        case close
        case semicolon

        var description: String {
            switch self {
            case .word(let text): "`\(text)`"
            case .open: "`{`"
            case .close: "`}`"
            case .semicolon: "`;`"
            }
        }
    }

    private var tokens: [Token]
    private var position = 0

    init(_ text: String) throws(DNSTSIGError) {
        let bytes = Array(text.utf8)
        var tokens: [Token] = []
        var index = 0
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : 0
            if isSpace(byte) {
                index += 1
            } else if byte == UInt8(ascii: "#") || (byte == UInt8(ascii: "/") && next == UInt8(ascii: "/")) {
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            } else if byte == UInt8(ascii: "/") && next == UInt8(ascii: "*") {
                index += 2
                while index + 1 < bytes.count, !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) {
                    index += 1
                }
                guard index + 1 < bytes.count else { throw DNSTSIGError(.invalidKey, "unterminated comment") }
                index += 2
            } else if byte == UInt8(ascii: "{") {
                tokens.append(.open)
                index += 1
            } else if byte == UInt8(ascii: "}") {
                tokens.append(.close)
                index += 1
            } else if byte == UInt8(ascii: ";") {
                tokens.append(.semicolon)
                index += 1
            } else if byte == UInt8(ascii: "\"") {
                guard let end = bytes[(index + 1)...].firstIndex(of: UInt8(ascii: "\"")) else {
                    throw DNSTSIGError(.invalidKey, "unterminated string")
                }
                tokens.append(.word(String(decoding: bytes[(index + 1)..<end], as: UTF8.self)))
                index = end + 1
            } else {
                let start = index
                while index < bytes.count, !isSpace(bytes[index]),
                      ![UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ";"), UInt8(ascii: "\"")].contains(bytes[index]) {
                    index += 1
                }
                tokens.append(.word(String(decoding: bytes[start..<index], as: UTF8.self)))
            }
        }
        self.tokens = tokens
    }

    mutating func next() -> Token? {
        guard position < tokens.count else { return nil }
        defer { position += 1 }
        return tokens[position]
    }

    mutating func expect(_ token: Token) throws(DNSTSIGError) {
        let found = next()
        guard found == token else { throw DNSTSIGError(.invalidKey, "expected \(token), found \(found.map(\.description) ?? "end")") }
    }
}
