import Foundation

/// The `--config FILE` JSON document: everything the shared flags can say, so that credentials need
/// not appear on command lines (where `ps` shows them). Flags given on the command line override
/// the file's values; a list flag (`--provider`, `--resolve`, `--protect`) replaces the file's list.
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
///   "serve": { "listen": "127.0.0.1:8053", "zone": "zone.txt", "upstreams": ["doh=…"],
///              "tlsCert": "cert.pem", "tlsKey": "key.pem", "tlsTicketKeys": "ticket.keys",
///              "views": "views.json", "adminToken": "…",
///              "reportTokens": ["…"], "reportWindow": 300, "reportThreshold": 3, "reportHold": 600,
///              "redis": "redis://:password@10.0.0.5:6379/0", "redisNamespace": "httpdns" }
/// }
/// ```
/// Unknown keys are errors, so a misspelt `"provider"` cannot silently fall back to the defaults.
struct ConfigFile: Sendable, Equatable {
    /// The `serve` section.
    struct Serve: Sendable, Equatable {
        var listen: String?
        var zone: String?
        var upstreams: [String]?
        var tlsCert: String?
        var tlsKey: String?
        var tlsTicketKeys: String? = nil
        var views: String? = nil
        /// The bearer token of `/status` (kept out of the process list, unlike `--admin-token`).
        var adminToken: String?
        /// Bearer tokens for `POST /report` (kept here rather than on the command line).
        var reportTokens: [String]? = nil
        var reportWindow: Double? = nil
        var reportThreshold: Double? = nil
        var reportHold: Double? = nil
        /// The fleet's Redis URL, password included (kept here rather than on the command line).
        var redis: String? = nil
        var redisNamespace: String? = nil
    }

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
    var serve: Serve?

    /// Largest config file read; a config is a few hundred bytes.
    static let maxBytes = 1 << 20

    static let knownKeys: Set<String> = [
        "providers", "localDNS", "httpdnsOnly", "allowPrivate", "type", "cacert", "timeout", "protect", "resolve",
        "fallbackIPs", "serve",
    ]
    static let knownServeKeys: Set<String> = [
        "listen", "zone", "upstreams", "tlsCert", "tlsKey", "tlsTicketKeys", "views", "adminToken", "reportTokens", "reportWindow", "reportThreshold",
        "reportHold", "redis", "redisNamespace",
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
            object = try JSONSerialization.jsonObject(with: data, options: [])
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
        if let section = root["serve"] {
            guard let serve = section as? [String: Any] else { throw ConfigError(message: "\"serve\" must be an object") }
            try checkKeys(serve, known: knownServeKeys, section: "serve")
            config.serve = Serve(
                listen: try string(serve, "listen"), zone: try string(serve, "zone"),
                upstreams: try stringList(serve, "upstreams"), tlsCert: try string(serve, "tlsCert"),
                tlsKey: try string(serve, "tlsKey"), tlsTicketKeys: try string(serve, "tlsTicketKeys"), views: try string(serve, "views"), adminToken: try string(serve, "adminToken"),
                reportTokens: try stringList(serve, "reportTokens"), reportWindow: try number(serve, "reportWindow"),
                reportThreshold: try number(serve, "reportThreshold"), reportHold: try number(serve, "reportHold"),
                redis: try string(serve, "redis"), redisNamespace: try string(serve, "redisNamespace"))
        }
        return config
    }

    /// Makes file paths in the config relative to the config file's directory, as people expect.
    mutating func resolvePaths(relativeTo directory: String) {
        func absolute(_ path: String?) -> String? {
            guard let path, !path.hasPrefix("/") else { return path }
            return URL(fileURLWithPath: directory).appendingPathComponent(path).path
        }
        cacert = absolute(cacert)
        if var section = serve {
            section.zone = absolute(section.zone)
            section.tlsCert = absolute(section.tlsCert)
            section.tlsKey = absolute(section.tlsKey)
            section.tlsTicketKeys = absolute(section.tlsTicketKeys)
            section.views = absolute(section.views)
            serve = section
        }
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
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}

/// Why a config document was rejected.
struct ConfigError: Error, Sendable {
    var message: String
}
