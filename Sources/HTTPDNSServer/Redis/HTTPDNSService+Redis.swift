import HTTPDNSCore
import HTTPDNSFleet

extension HTTPDNSService.Reports {
    /// Report state shared by a fleet in one Redis (issue 24): a report that reaches any instance
    /// counts for all, and a decision made on one instance holds on every instance within a second.
    ///
    /// Redis is never on a query's path: answers read the instance's own decisions as without Redis,
    /// and a worker thread of its own writes accepted reports and decisions and polls the decisions
    /// made elsewhere. While Redis is unreachable each instance works alone, as without Redis.
    public struct Redis: Sendable, Hashable, CustomStringConvertible {
        /// Where Redis listens.
        public enum Endpoint: Sendable, Hashable {
            case tcp(host: String, port: Int)
            case unix(path: String)
        }

        /// Where Redis listens. Default `127.0.0.1:6379`.
        public var endpoint: Endpoint = .tcp(host: "127.0.0.1", port: 6379)
        /// The ACL user (Redis 6); nil sends `AUTH password` alone. Default nil.
        public var user: String? = nil
        /// The password (`AUTH`); nil sends none. Default nil.
        public var password: String? = nil
        /// The database (`SELECT`). Default 0.
        public var database: Int = 0
        /// Prefix of every key, so several fleets can share one Redis. Default `httpdns`.
        public var namespace: String = "httpdns"
        /// Longest a connection may take to open. Default 200 ms.
        public var connectTimeout: Duration = .milliseconds(200)
        /// Longest one exchange of commands may take. Default 200 ms.
        public var commandTimeout: Duration = .milliseconds(200)
        /// How often decisions made elsewhere are read. Default 250 ms.
        public var pollInterval: Duration = .milliseconds(250)
        /// Reports kept to send while Redis is away; past it the oldest are dropped, counted. Default 1,000.
        public var maxPending: Int = 1_000

        public init(endpoint: Endpoint = .tcp(host: "127.0.0.1", port: 6379)) {
            self.endpoint = endpoint
        }

        /// The endpoint, user, database and namespace; the password only as `***` (a configuration
        /// printed into a log must not leak it).
        public var description: String {
            let credentials = password == nil ? (user.map { "\($0)@" } ?? "") : "\(user ?? ""):***@"
            switch endpoint {
            case .tcp(let host, let port):
                let shownHost = host.contains(":") ? "[\(host)]" : host
                return "redis://\(credentials)\(shownHost):\(port)/\(database) (namespace \(namespace))"
            case .unix(let path):
                return "unix://\(credentials)\(path) (namespace \(namespace))"
            }
        }

        /// Reads `redis://[user:password@]host:port[/db]`, `unix:/path/to/socket` or
        /// `unix://[user:]password@/path/to/socket`; `%XX` escapes in the user and password.
        ///
        /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming what is wrong (never the password).
        public init(url: String) throws(HTTPDNSServiceError) {
            func bad(_ detail: String) -> HTTPDNSServiceError { HTTPDNSServiceError(.invalidConfiguration, "redis: \(detail)") }
            if url.hasPrefix("unix:") {
                var path = Substring(url.dropFirst(5))
                if path.hasPrefix("//") {
                    // unix://[user:]password@/path: the socket of a Redis with requirepass.
                    let rest = path.dropFirst(2)
                    guard let at = rest.firstIndex(of: "@") else { throw bad("expected unix://[user:]password@/path/to/socket") }
                    try readCredentials(rest[..<at])
                    path = rest[rest.index(after: at)...]
                }
                guard path.hasPrefix("/") else { throw bad("a unix socket path must be absolute (unix:/path/to/socket)") }
                endpoint = .unix(path: String(path))
                return
            }
            guard url.hasPrefix("redis://") else { throw bad("expected redis://[user:password@]host:port[/db] or unix:/path") }
            var rest = Substring(url.dropFirst(8))
            if let at = rest.lastIndex(of: "@") {
                try readCredentials(rest[..<at])
                rest = rest[rest.index(after: at)...]
            }
            var hostPort = rest
            if let slash = rest.firstIndex(of: "/") {
                hostPort = rest[..<slash]
                let db = rest[rest.index(after: slash)...]
                if !db.isEmpty {
                    guard let number = Int(db), (0...65_535).contains(number) else { throw bad("the database must be a number") }
                    database = number
                }
            }
            var host = String(hostPort)
            var port = 6379
            if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
                host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
                let after = hostPort[hostPort.index(after: close)...]
                if after.hasPrefix(":") {
                    guard let number = Int(after.dropFirst()), (1...65_535).contains(number) else { throw bad("the port must be 1-65535") }
                    port = number
                }
            } else if let colon = hostPort.lastIndex(of: ":") {
                host = String(hostPort[..<colon])
                guard let number = Int(hostPort[hostPort.index(after: colon)...]), (1...65_535).contains(number) else {
                    throw bad("the port must be 1-65535")
                }
                port = number
            }
            guard !host.isEmpty else { throw bad("no host") }
            endpoint = .tcp(host: host, port: port)
        }

        /// `user:password`, `:password` or `password`, percent-decoded.
        private mutating func readCredentials(_ credentials: Substring) throws(HTTPDNSServiceError) {
            guard !credentials.isEmpty else { throw HTTPDNSServiceError(.invalidConfiguration, "redis: an empty password before @") }
            if let colon = credentials.firstIndex(of: ":") {
                let user = String(credentials[..<colon])
                self.user = user.isEmpty ? nil : Self.percentDecoded(user)
                password = Self.percentDecoded(String(credentials[credentials.index(after: colon)...]))
            } else {
                password = Self.percentDecoded(String(credentials))
            }
        }

        /// `%XX` escapes decoded (a password may hold `@` or `:`); the text as is when malformed.
        static func percentDecoded(_ text: String) -> String {
            var bytes: [UInt8] = []
            var utf8 = Array(text.utf8)[...]
            while let byte = utf8.popFirst() {
                if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                    bytes.append(value)
                    utf8 = utf8.dropFirst(2)
                } else {
                    bytes.append(byte)
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the field.
        func validate() throws(HTTPDNSServiceError) {
            func bad(_ detail: String) -> HTTPDNSServiceError { HTTPDNSServiceError(.invalidConfiguration, "redis: \(detail)") }
            guard !namespace.isEmpty, namespace.utf8.count <= 64, !namespace.contains(where: { $0 == " " || $0 == "\n" }) else {
                throw bad("the namespace must be 1-64 characters without spaces")
            }
            guard connectTimeout > .zero, commandTimeout > .zero, pollInterval > .zero else { throw bad("timeouts must be positive") }
            guard maxPending >= 1 else { throw bad("maxPending must be at least 1") }
        }

        /// The connection half, as the fleet's report sharer takes it.
        package var connection: HTTPDNSRedisSettings {
            let fleetEndpoint: HTTPDNSRedisSettings.Endpoint
            switch endpoint {
            case .tcp(let host, let port): fleetEndpoint = .tcp(host: host, port: port)
            case .unix(let path): fleetEndpoint = .unix(path: path)
            }
            return HTTPDNSRedisSettings(
                endpoint: fleetEndpoint, user: user, password: password, database: database, connectTimeout: connectTimeout,
                commandTimeout: commandTimeout, pollInterval: pollInterval)
        }
    }
}
