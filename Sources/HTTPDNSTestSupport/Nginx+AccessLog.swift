import Foundation

extension Nginx {
    /// One line of nginx's access log: which virtual host answered what, and how much was sent.
    ///
    /// Tests read it to see what reached the server: a request never sent (TLS refused by the
    /// client) has no line, and a download the client cut short shows `completed == false` and the
    /// bytes nginx managed to send.
    package struct AccessLogEntry: Sendable, Hashable {
        /// The `log_format` behind the fields, tab-separated (nginx escapes tabs inside values).
        static let format = ["$server_name", "$server_addr", "$ssl_server_name", "$http_host", "$request_method",
                             "$request_uri", "$status", "$body_bytes_sent", "$request_completion", "$server_protocol",
                             "$request_length"].joined(separator: "\\t")

        /// The first `server_name` of the virtual host that answered.
        package var serverName: String
        /// The local address the connection came in on.
        package var serverAddress: String
        /// The TLS SNI the client sent; empty for plain HTTP.
        package var sni: String
        /// The `Host` header (`:authority` in HTTP/2).
        package var host: String
        package var method: String
        /// Path and query as sent.
        package var uri: String
        package var status: Int
        /// Response body bytes nginx sent.
        package var bodyBytesSent: Int
        /// Whether nginx finished the response (`$request_completion` is `OK`).
        package var completed: Bool
        /// `HTTP/1.1` or `HTTP/2.0`.
        package var httpProtocol: String
        /// Bytes of the request (line, headers and body) nginx read.
        package var requestLength: Int

        /// Parses one line; nil when it does not have the fields of ``format``.
        init?(_ line: Substring) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map { $0 == "-" ? "" : String($0) }
            guard fields.count == 11, let status = Int(fields[6]), let sent = Int(fields[7]) else { return nil }
            serverName = fields[0]
            serverAddress = fields[1]
            sni = fields[2]
            host = fields[3]
            method = fields[4]
            uri = fields[5]
            self.status = status
            bodyBytesSent = sent
            completed = fields[8] == "OK"
            httpProtocol = fields[9]
            requestLength = Int(fields[10]) ?? 0
        }
    }
}
