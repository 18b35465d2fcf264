/// Where and how the report sharer reaches the fleet's Redis: the connection half of the service's
/// public `HTTPDNSService.Reports.Redis`, which the service maps into this (the fleet module does not
/// see the service's types).
package struct HTTPDNSRedisSettings: Sendable, Hashable {
    /// A TCP host and port, or a unix socket.
    package enum Endpoint: Sendable, Hashable {
        case tcp(host: String, port: Int)
        case unix(path: String)
    }

    package var endpoint: Endpoint
    /// `AUTH` user (Redis 6 ACLs); nil: the password alone, or no `AUTH`.
    package var user: String?
    /// `AUTH` password; nil: no `AUTH`.
    package var password: String?
    /// `SELECT`ed database; 0 is not selected.
    package var database: Int
    package var connectTimeout: Duration
    package var commandTimeout: Duration
    /// How often the fleet's state is read.
    package var pollInterval: Duration

    package init(
        endpoint: Endpoint, user: String? = nil, password: String? = nil, database: Int = 0,
        connectTimeout: Duration = .milliseconds(200), commandTimeout: Duration = .milliseconds(200),
        pollInterval: Duration = .milliseconds(250)
    ) {
        self.endpoint = endpoint
        self.user = user
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.pollInterval = pollInterval
    }
}
