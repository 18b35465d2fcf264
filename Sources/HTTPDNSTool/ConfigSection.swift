/// A subcommand's section of the config file (`"serve"`, `"stub"`), read against the same option
/// rows (``OptionSpec``) that parse its flags and print its `--help`: every option but `--config`
/// and `--help` has a key, so the file can say whatever the flags can and the two cannot drift.
///
/// A key is the option's long name in camelCase (`--drain-delay` → `drainDelay`); a repeatable
/// option's key is plural (``listKeys``: `--trusted-proxy` → `trustedProxies`) and takes a list
/// (or one string). Values: a string, a number (seconds, counts), `true`/`false` for an option
/// without a value. Paths (``pathOptions``) are relative to the config file's directory. Flags on
/// the command line win: an option given there ignores the file's value (a list replaces the
/// file's list), as for the top-level keys.
struct ConfigSection: Sendable {
    /// The section's name in the file (`serve`).
    var name: String
    /// The subcommand's option rows.
    var options: [OptionSpec]
    /// Repeatable options, with their (plural) key.
    var listKeys: [String: String]
    /// Options whose value is a file or directory path.
    var pathOptions: Set<String>

    /// Options with no key: the file itself, and help.
    static let unkeyed: Set<String> = ["config", "help"]

    /// The key of `option`, nil for an option the file cannot hold.
    func key(of option: OptionSpec) -> String? {
        guard !Self.unkeyed.contains(option.long) else { return nil }
        return listKeys[option.long] ?? Self.camelCase(option.long)
    }

    /// Every key, in the order of the option rows (for `--help` and the reference).
    var keys: [String] {
        var seen = Set<String>()
        return options.compactMap { key(of: $0) }.filter { seen.insert($0).inserted }
    }

    /// Every key with its option, for `--help`'s CONFIG KEYS: `drainDelay (--drain-delay), …`.
    var reference: String {
        options.compactMap { option in
            key(of: option).map { "\($0) (--\(option.long)\(listKeys[option.long] != nil ? ", a list" : ""))" }
        }.joined(separator: ", ")
    }

    /// `drain-delay` → `drainDelay`.
    static func camelCase(_ long: String) -> String {
        let words = long.split(separator: "-")
        return (words.first.map(String.init) ?? "") + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// `path`, absolute against `directory` when it is relative.
    static func absolute(_ path: String, in directory: String) -> String {
        guard !path.hasPrefix("/"), path != "-", !directory.isEmpty else { return path }
        return directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }

    /// Adds the section's values of `config` to `parsed`, for the options the command line did not give.
    /// - Throws: ``UsageError`` naming the file's key: unknown, or a value of the wrong kind.
    func merge(_ config: ConfigFile, into parsed: inout ParsedArguments, command: String) throws(UsageError) {
        guard let values = config.sections[name] else { return }
        func bad(_ message: String) -> UsageError { UsageError("config file: \"\(name)\": \(message)", command: command) }
        let byKey = Dictionary(options.compactMap { option in key(of: option).map { ($0, option) } }, uniquingKeysWith: { first, _ in first })
        for key in values.keys.sorted() {
            guard let option = byKey[key], let value = values[key] else {
                throw bad("unknown key \"\(key)\" (known: \(keys.sorted().joined(separator: ", ")))")
            }
            guard !parsed.has(option.key) else { continue }
            var texts: [String]
            switch (value, option.takesValue, listKeys[option.long] != nil) {
            case (.bool(let on), false, _):
                texts = on ? [""] : []
            case (_, false, _):
                throw bad("\"\(key)\" must be true or false")
            case (.list(let list), true, true):
                texts = list
            case (.string(let text), true, _):
                texts = [text]
            case (.number(let number), true, _):
                texts = [number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)]
            case (.list, true, false):
                throw bad("\"\(key)\" takes one value, not a list")
            case (.bool, true, _):
                throw bad("\"\(key)\" takes a value (--\(option.long) <\(option.valueName ?? "value")>), not true or false")
            }
            if pathOptions.contains(option.long) { texts = texts.map { Self.absolute($0, in: config.directory) } }
            for text in texts { parsed.add(option.key, text) }
        }
    }
}
