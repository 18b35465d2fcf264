import Foundation
import HTTPDNSCore

extension Nginx {
    /// What nginx should serve: virtual hosts on loopback listeners, each with a few locations.
    ///
    /// Every TLS virtual host shares one port (``Nginx/httpsPort``) and every plain one another
    /// (``Nginx/httpPort``), on the host's ``VirtualHost/address`` or ``listenAddress``; hosts on one
    /// address and port are told apart by SNI and `Host`, as on a real shared server. The first host
    /// on each address and port is nginx's default server there.
    package struct Configuration: Sendable {
        /// The address virtual hosts listen on unless they say otherwise; keep it loopback.
        /// Default 127.0.0.1.
        package var listenAddress: HTTPDNSIPAddress = HTTPDNSIPAddress("127.0.0.1")!
        /// The virtual hosts, in order. Default none (nginx then cannot start: at least one is needed).
        package var virtualHosts: [VirtualHost] = []
        /// The TLS port; nil (default) picks one free on every TLS listen address. Set it to bring
        /// a server back on the port an earlier one used (an address "reassigned" to another site).
        package var httpsPort: UInt16?
        /// The plain-HTTP port; nil (default) picks a free one.
        package var httpPort: UInt16?
        /// More directives for the `http` block, each a full line without the `;`
        /// (`"client_max_body_size 0"`). Default none.
        package var httpDirectives: [String] = []
        /// Worker processes. Default 1: tests share two cores.
        package var workerProcesses: Int = 1
        /// Where nginx lives. Default `/usr/sbin/nginx` (Debian `nginx-light`).
        package var executable: String = "/usr/sbin/nginx"
        /// How long to wait for every listener to accept connections. Default 10 s.
        package var startTimeout: Duration = .seconds(10)
        /// How long ``Nginx/stop()`` waits after SIGTERM before SIGKILL. Default 10 s.
        package var stopTimeout: Duration = .seconds(10)

        package init(virtualHosts: [VirtualHost] = []) {
            self.virtualHosts = virtualHosts
        }
    }

    /// One `server` block.
    package struct VirtualHost: Sendable {
        /// Certificate and key files for the TLS listener (with `http2`).
        package struct TLS: Sendable, Hashable {
            package var certificatePath: String
            package var keyPath: String

            package init(certificatePath: String, keyPath: String) {
                self.certificatePath = certificatePath
                self.keyPath = keyPath
            }
        }

        /// `server_name` values; `_` matches nothing in particular (use it for a default server).
        package var serverNames: [String]
        /// TLS material; nil serves plain HTTP on ``Nginx/httpPort``. Default nil.
        package var tls: TLS?
        /// The listen address; nil uses ``Configuration/listenAddress``. Default nil.
        package var address: HTTPDNSIPAddress?
        /// The locations, in order. Default none (nginx then answers 404 from its empty root).
        package var locations: [Location] = []
        /// Headers added to every response of this host (`add_header … always` at server level;
        /// nginx drops them in locations that add headers of their own, so ``Location`` repeats
        /// them there). Default none.
        package var headers: [(name: String, value: String)] = []
        /// More directives for the `server` block, each without the `;`. Default none.
        package var directives: [String] = []

        /// A host named `names`, served over TLS with `leaf` when given.
        package init(_ names: [String], tls leaf: TestCertificates.Leaf? = nil, address: HTTPDNSIPAddress? = nil, locations: [Location] = []) {
            self.serverNames = names
            self.tls = leaf.map { TLS(certificatePath: $0.certificatePath, keyPath: $0.keyPath) }
            self.address = address
            self.locations = locations
        }
    }

    /// One `location` block.
    package struct Location: Sendable {
        /// What the location does.
        package enum Action: Sendable {
            /// `return STATUS "TEXT"`; `$name` in the text is an nginx variable (`$http_cookie`).
            case text(String, status: Int)
            /// `return STATUS URL` (301, 302, 303, 307, 308); variables allowed.
            case redirect(String, status: Int)
            /// `proxy_pass URL` over HTTP/1.1, with the client's `Host` passed on.
            case proxy(String)
            /// Static files from this directory (`root`).
            case files(root: String)
            /// Nothing but ``Location/directives``.
            case none
        }

        /// The prefix (or the exact path with ``exact``).
        package var path: String
        /// `location = PATH` instead of a prefix match. Default false.
        package var exact: Bool = false
        /// What is answered.
        package var action: Action
        /// Headers added with `add_header … always`; variables allowed. Default none.
        package var headers: [(name: String, value: String)] = []
        /// More directives, each without the `;` (`"limit_rate 1m"`). Default none.
        package var directives: [String] = []

        package init(_ path: String, exact: Bool = false, _ action: Action, headers: [(name: String, value: String)] = [], directives: [String] = []) {
            self.path = path
            self.exact = exact
            self.action = action
            self.headers = headers
            self.directives = directives
        }

        /// `return status "text"`.
        package static func text(_ path: String, _ text: String, status: Int = 200, headers: [(name: String, value: String)] = []) -> Location {
            Location(path, .text(text, status: status), headers: headers)
        }

        /// `return status URL`.
        package static func redirect(_ path: String, to url: String, status: Int = 302) -> Location {
            Location(path, .redirect(url, status: status))
        }

        /// `proxy_pass URL`, streaming request bodies of any size (no buffering, no size limit).
        package static func proxy(_ path: String, to url: String, headers: [(name: String, value: String)] = []) -> Location {
            Location(
                path, .proxy(url), headers: headers,
                directives: ["client_max_body_size 0", "proxy_request_buffering off", "proxy_buffering off"])
        }

        /// Stores `PUT` bodies of any size as files under `root` (WebDAV, `dav_methods PUT`), missing
        /// folders made: `PUT /upload/a.bin` writes `root/upload/a.bin` and answers 201 (204 when
        /// it replaced a file) once the whole body is stored.
        ///
        /// An upload sink in nginx's process rather than the test's: what the client holds can then be
        /// measured alone. nginx spools the body through its temporary folder, in memory only up to
        /// `client_body_buffer_size` (16 KiB); keep `root` on the same file system as `TMPDIR` so
        /// the spooled file is renamed, not copied.
        package static func putSink(_ path: String, root: String) -> Location {
            Location(path, .files(root: root), directives: ["dav_methods PUT", "create_full_put_path on", "client_max_body_size 0"])
        }
    }
}

extension Nginx {
    /// The characters a server name or path may not hold: they would end or escape the directive.
    private static let unsafeCharacters = CharacterSet(charactersIn: " \t\r\n;{}\"'\\$#")

    /// Double-quotes `text` for nginx; `$` stays a variable reference.
    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The listeners the configuration needs: address and TLS flag of each, in first-use order.
    static func listeners(_ configuration: Configuration) -> [(address: HTTPDNSIPAddress, tls: Bool)] {
        var result: [(address: HTTPDNSIPAddress, tls: Bool)] = []
        for host in configuration.virtualHosts {
            let listener = (address: host.address ?? configuration.listenAddress, tls: host.tls != nil)
            if !result.contains(where: { $0.address == listener.address && $0.tls == listener.tls }) {
                result.append(listener)
            }
        }
        return result
    }

    /// Checks what would break the file's syntax; directives given as raw lines are the caller's.
    static func validate(_ configuration: Configuration) throws(Failure) {
        guard !configuration.virtualHosts.isEmpty else {
            throw Failure(.invalidConfiguration, "no virtual hosts")
        }
        for host in configuration.virtualHosts {
            for name in host.serverNames where name.isEmpty || name.rangeOfCharacter(from: unsafeCharacters) != nil {
                throw Failure(.invalidConfiguration, "server name \(quoted(name)) is empty or holds a character nginx would misread")
            }
            for location in host.locations where !location.path.hasPrefix("/") || location.path.rangeOfCharacter(from: unsafeCharacters) != nil {
                throw Failure(.invalidConfiguration, "location \(quoted(location.path)) must start with / and hold no quote, space, ; { } $ or #")
            }
            for location in host.locations {
                switch location.action {
                case .text(_, let status) where !(100...599).contains(status),
                     .redirect(_, let status) where ![301, 302, 303, 307, 308].contains(status):
                    throw Failure(.invalidConfiguration, "location \(location.path): status out of range")
                default:
                    break
                }
            }
        }
    }

    /// The complete `nginx.conf` with every path inside `directory`.
    static func configFile(_ configuration: Configuration, directory: URL, httpPort: UInt16?, httpsPort: UInt16?) -> String {
        let path = { (name: String) in quoted(directory.appendingPathComponent(name).path) }
        var lines: [String] = []
        // As root, workers would otherwise switch to `nobody`; as another user `user` only warns.
        if geteuid() == 0 { lines.append("user root root;") }
        lines += [
            "worker_processes \(max(1, configuration.workerProcesses));",
            "pid \(path("nginx.pid"));",
            "lock_file \(path("nginx.lock"));",
            "error_log \(path("error.log")) info;",
            "events { worker_connections 1024; }",
            "http {",
            "    default_type text/plain;",
            "    client_body_temp_path \(path("body"));",
            "    proxy_temp_path \(path("proxy"));",
            "    fastcgi_temp_path \(path("fastcgi"));",
            "    uwsgi_temp_path \(path("uwsgi"));",
            "    scgi_temp_path \(path("scgi"));",
            "    server_names_hash_bucket_size 128;",
            // Tab-separated; nginx escapes control characters (tabs included) in values as \xXX.
            "    log_format httpdns \"\(AccessLogEntry.format)\";",
            "    access_log \(path("access.log")) httpdns;",
        ]
        lines += configuration.httpDirectives.map { "    \($0);" }
        for host in configuration.virtualHosts {
            let address = host.address ?? configuration.listenAddress
            lines.append("    server {")
            if let tls = host.tls, let httpsPort {
                lines += [
                    "        listen \(address.uriText):\(httpsPort) ssl http2;",
                    "        ssl_certificate \(quoted(tls.certificatePath));",
                    "        ssl_certificate_key \(quoted(tls.keyPath));",
                ]
            } else if let httpPort {
                lines.append("        listen \(address.uriText):\(httpPort);")
            }
            lines.append("        server_name \(host.serverNames.joined(separator: " "));")
            lines += host.headers.map { "        add_header \($0.name) \(quoted($0.value)) always;" }
            lines += host.directives.map { "        \($0);" }
            for location in host.locations {
                lines += locationBlock(location, inherited: host.headers)
            }
            lines.append("    }")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func locationBlock(_ location: Location, inherited: [(name: String, value: String)]) -> [String] {
        var lines = ["        location \(location.exact ? "= " : "")\(location.path) {"]
        // add_header in a location replaces the server's list: repeat the server's headers.
        let headers = location.headers.isEmpty ? [] : inherited + location.headers
        lines += headers.map { "            add_header \($0.name) \(quoted($0.value)) always;" }
        lines += location.directives.map { "            \($0);" }
        switch location.action {
        case .text(let text, let status):
            lines.append("            return \(status) \(quoted(text));")
        case .redirect(let url, let status):
            lines.append("            return \(status) \(quoted(url));")
        case .proxy(let url):
            lines += [
                "            proxy_http_version 1.1;",
                "            proxy_set_header Host $http_host;",
                "            proxy_set_header Connection \"\";",
                "            proxy_pass \(url);",
            ]
        case .files(let root):
            lines.append("            root \(quoted(root));")
        case .none:
            break
        }
        lines.append("        }")
        return lines
    }
}
