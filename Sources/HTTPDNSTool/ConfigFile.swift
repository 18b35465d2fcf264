import Foundation

/// The `--config FILE` JSON document: everything the flags can say, so that credentials need not
/// appear on command lines (where `ps` shows them). Flags given on the command line override the
/// file's values; a list flag (`--provider`, `--resolve`, `--protect`, `--upstream`…) replaces the
/// file's list.
///
/// The top level holds the shared flags (`resolve`, `fetch`, `check`, and the engine of `proxy` and
/// `stub`); the `"serve"` and `"stub"` objects hold their subcommand's flags, each under the key
/// its option row gives (``ConfigSection``): the option's name in camelCase, plural for a list
/// (`--drain-delay` → `drainDelay`, `--trusted-proxy` → `trustedProxies`). `httpdns serve --help`
/// lists every key.
///
/// ```json
/// {
///   "providers": ["dnspod=https://119.29.29.99?token=SECRET", "doh=https://dns.example/dns-query"],
///   "localDNS": "system",                // or "udp=IP:PORT"
///   "httpdnsOnly": false,
///   "allowPrivate": false,
///   "type": "A",                         // A | AAAA | BOTH
///   "cacert": "ca.pem",                  // relative paths are relative to this file
///   "timeout": 5,                        // seconds
///   "protect": ["*.example.com", "example.com"],
///   "resolve": ["api.example.com:443:203.0.113.7"],
///   "fallbackIPs": "https://ips.example.com/ips",
///   "serve": { "listen": ["127.0.0.1:8053"], "zone": "zone.json", "upstreams": ["doh=…"],
///              "tlsCert": "cert.pem", "tlsKey": "key.pem", "drainDelay": 3, "trustedProxies": ["10.0.0.0/8"],
///              "adminToken": "…", "reportTokens": ["…"], "redis": "redis://:password@10.0.0.5:6379/0" },
///   "stub": { "listen": "127.0.0.153:53", "upstreams": ["doh=https://dns.example/dns-query"], "hosts": ["hosts"] }
/// }
/// ```
/// Unknown keys are errors, so a misspelt `"provider"` cannot silently fall back to the defaults.
/// `//` line comments outside strings are allowed (``strippingLineComments(_:)``), as the example
/// above shows.
struct ConfigFile: Sendable, Equatable {
    var providers: [String]?
    var localDNS: String?
    var httpdnsOnly: Bool?
    var allowPrivate: Bool?
    var type: String?
    var cacert: String?
    var timeout: Double?
    var protect: [String]?
    var resolve: [String]?
    var fallbackIPs: String?
    /// The `"serve"` and `"stub"` objects, as written (read against their option rows by ``ConfigSection``).
    var sections: [String: [String: ConfigValue]] = [:]
    /// The file's directory: relative paths in a section are relative to it.
    var directory = ""

    /// Largest config file read; a config is a few hundred bytes.
    static let maxBytes = 1 << 20

    static let knownKeys: Set<String> = [
        "providers", "localDNS", "httpdnsOnly", "allowPrivate", "type", "cacert", "timeout", "protect", "resolve",
        "fallbackIPs", "serve", "stub",
    ]

    init() {}

    /// Reads and validates the file at `path`.
    /// - Throws: ``UsageError`` naming the file and the problem (missing, too large, not JSON,
    ///   unknown key, wrong type).
    static func load(path: String, command: String) throws(UsageError) -> ConfigFile {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: maxBytes + 1) ?? Data()
        } catch {
            throw UsageError("cannot read config file \(path): \(error.localizedDescription)", command: command)
        }
        guard data.count <= maxBytes else {
            throw UsageError("config file \(path) is larger than \(maxBytes) bytes", command: command)
        }
        do {
            var config = try parse(data)
            config.resolvePaths(relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent().path)
            return config
        } catch {
            throw UsageError("config file \(path): \(error.message)", command: command)
        }
    }

    /// Parses a config document.
    /// - Throws: ``ConfigError`` for anything but an object with known keys of the right types.
    static func parse(_ data: Data) throws(ConfigError) -> ConfigFile {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: strippingLineComments(data), options: [])
        } catch {
            throw ConfigError(message: "not valid JSON")
        }
        guard let root = object as? [String: Any] else { throw ConfigError(message: "top level must be a JSON object") }
        try checkKeys(root, known: knownKeys, section: nil)
        var config = ConfigFile()
        config.providers = try stringList(root, "providers")
        config.localDNS = try string(root, "localDNS")
        config.httpdnsOnly = try bool(root, "httpdnsOnly")
        config.allowPrivate = try bool(root, "allowPrivate")
        config.type = try string(root, "type")
        config.cacert = try string(root, "cacert")
        config.timeout = try number(root, "timeout")
        config.protect = try stringList(root, "protect")
        config.resolve = try stringList(root, "resolve")
        config.fallbackIPs = try string(root, "fallbackIPs")
        for name in ["serve", "stub"] {
            guard let section = root[name] else { continue }
            guard let object = section as? [String: Any] else { throw ConfigError(message: "\"\(name)\" must be an object") }
            var values: [String: ConfigValue] = [:]
            for (key, value) in object {
                guard let read = ConfigValue(value) else {
                    throw ConfigError(message: "\"\(key)\" in \"\(name)\" must be a string, a number, true or false, or a list of strings")
                }
                values[key] = read
            }
            config.sections[name] = values
        }
        return config
    }

    /// Makes file paths in the config relative to the config file's directory, as people expect
    /// (a section's paths are resolved by ``ConfigSection`` from this ``directory``).
    mutating func resolvePaths(relativeTo directory: String) {
        self.directory = directory
        cacert = cacert.map { ConfigSection.absolute($0, in: directory) }
    }

    private static func checkKeys(_ object: [String: Any], known: Set<String>, section: String?) throws(ConfigError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            let place = section.map { " in \"\($0)\"" } ?? ""
            throw ConfigError(message: "unknown key \"\(unknown)\"\(place) (known: \(known.sorted().joined(separator: ", ")))")
        }
    }

    private static func string(_ object: [String: Any], _ key: String) throws(ConfigError) -> String? {
        guard let value = object[key] else { return nil }
        guard let text = value as? String else { throw ConfigError(message: "\"\(key)\" must be a string") }
        return text
    }

    private static func stringList(_ object: [String: Any], _ key: String) throws(ConfigError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard let list = value as? [Any], let texts = list as? [String], texts.count == list.count else {
            throw ConfigError(message: "\"\(key)\" must be a list of strings")
        }
        return texts
    }

    /// JSON booleans only: `1` or `"true"` are rejected rather than guessed at.
    private static func bool(_ object: [String: Any], _ key: String) throws(ConfigError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, isBoolean(number) else {
            throw ConfigError(message: "\"\(key)\" must be true or false")
        }
        return number.boolValue
    }

    private static func number(_ object: [String: Any], _ key: String) throws(ConfigError) -> Double? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, !isBoolean(number) else {
            throw ConfigError(message: "\"\(key)\" must be a number")
        }
        return number.doubleValue
    }

    /// JSONSerialization gives booleans as NSNumbers of ObjC type `c` (char); numbers are `i`, `q`, `d`.
    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}

/// Why a config document was rejected.
struct ConfigError: Error, Sendable {
    var message: String
}

/// One value of a `"serve"` or `"stub"` key, as JSON gave it.
enum ConfigValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case list([String])

    init?(_ json: Any) {
        if let text = json as? String {
            self = .string(text)
        } else if let number = json as? NSNumber {
            self = ConfigFile.isBoolean(number) ? .bool(number.boolValue) : .number(number.doubleValue)
        } else if let list = json as? [Any], let texts = list as? [String], texts.count == list.count {
            self = .list(texts)
        } else {
            return nil
        }
    }
}
