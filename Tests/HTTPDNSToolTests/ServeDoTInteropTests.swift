import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// DNS over TLS from `httpdns serve`, asked by the clients people run: `kdig +tls` (opportunistic,
/// and strict with `+tls-ca`/`+tls-hostname` as Android's Private DNS checks), dnspython's
/// `dns.query.tls`, and Debian's stubby, Unbound (`forward-tls-upstream: yes`) and dnsdist 1.7 (a
/// DoT backend, passing its client's subnet as EDNS Client Subnet) forwarding to it, and HAProxy
/// passing DoT through in TCP mode with a PROXY v2 header (`--trusted-proxy`). One serve
/// answers them all; the zone gives loopback clients a view of their own (127.0.0.0/8), and
/// 127.0.0.2 alone another, so an answer shows whose address the view was chosen by.
final class ServeDoTInteropTests: ToolTestCase {
    private static let hostname = "dns.example.test"
    private static let loopbackView = "198.51.100.7"
    private static let secondView = "198.51.100.8"

    /// Runs a client to its end: its exit status, stdout and stderr apart (kdig warns on stderr).
    private func client(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let tool = try RunningTool(executable: URL(fileURLWithPath: executable), arguments: arguments)
        let status = try tool.wait(timeout: .seconds(30))
        return (status, String(decoding: tool.stdout, as: UTF8.self), String(decoding: tool.stderr, as: UTF8.self))
    }

    func testKdigDnspythonStubbyUnboundDnsdistAndHAProxyGetTheViewCorrectAnswer() throws {
        for tool in ["/usr/bin/kdig", "/usr/bin/dig", "/usr/bin/stubby", "/usr/sbin/unbound", "/usr/bin/dnsdist", "/usr/sbin/haproxy"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                return XCTFail("\(tool) not found: run scripts/ensure-deps.sh (knot-dnsutils, dnsutils, stubby, unbound, dnsdist, haproxy)")
            }
        }
        let directory = try temporaryDirectory()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: [Self.hostname], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let ca = certificates.caCertificatePath
        func write(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let views = try write("views.json", #"{"views": [{"name": "loopback", "networks": ["127.0.0.0/8"]}, {"name": "second", "networks": ["127.0.0.2/32"]}]}"#)
        let zone = try write("zone.json", """
            {"www.example.test": {"A": ["192.0.2.1"], "ttl": 60,
             "views": {"loopback": {"A": ["\(Self.loopbackView)"]}, "second": {"A": ["\(Self.secondView)"]}}}}
            """)
        let (server, urls) = try startServe([
            "--listen", "tls://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath, "--zone", zone, "--views", views,
            "--trusted-proxy", "127.0.0.1/32",
        ])
        defer { assertStopsCleanly(server) }
        let dot = try port(of: urls[0])

        // kdig: opportunistic TLS, strict TLS with the CA and name, and a strict check that fails
        // for a name the certificate does not hold (what Android's Private DNS refuses).
        func kdig(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
            try client("/usr/bin/kdig", ["@127.0.0.1", "-p", String(dot), "+timeout=5", "+retry=0", "+short"] + arguments)
        }
        let opportunistic = try kdig(["+tls", "www.example.test", "A"])
        XCTAssertEqual(opportunistic.output, Self.loopbackView + "\n", "kdig +tls: \(opportunistic.errors)")
        let strict = ["+tls-ca=\(ca)", "+tls-hostname=\(Self.hostname)"]
        XCTAssertEqual(try kdig(strict + ["www.example.test", "A"]).output, Self.loopbackView + "\n", "kdig +tls-ca +tls-hostname")
        XCTAssertEqual(
            try kdig(strict + ["+subnet=127.0.0.2/32", "www.example.test", "A"]).output, Self.secondView + "\n",
            "kdig's Client Subnet chooses the view")
        let wrongName = try kdig(["+tls-ca=\(ca)", "+tls-hostname=other.example.test", "www.example.test", "A"])
        XCTAssertFalse(wrongName.output.contains(Self.loopbackView), "a certificate for another name was accepted: \(wrongName.output)")

        // dnspython's own DoT client.
        let python = try client("/usr/bin/python3", [
            "-c",
            """
            import ssl, sys, dns.message, dns.query
            context = ssl.create_default_context(cafile=sys.argv[2])
            answer = dns.query.tls(dns.message.make_query("www.example.test", "A"), "127.0.0.1", port=int(sys.argv[1]),
                                   ssl_context=context, server_hostname="\(Self.hostname)", timeout=5)
            print(" ".join(sorted(item.address for rrset in answer.answer for item in rrset)))
            """,
            String(dot), ca,
        ])
        XCTAssertEqual(python.status, 0, python.errors)
        XCTAssertEqual(python.output, Self.loopbackView + "\n", "dnspython dns.query.tls")

        // The forwarders, each on a free loopback port, asked with dig over plain DNS.
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        func dig(_ port: UInt16, source: String? = nil) throws -> String {
            let bind = source.map { ["-b", $0] } ?? []
            return try client(
                "/usr/bin/dig", bind + ["@127.0.0.1", "-p", String(port), "+time=2", "+tries=1", "+short", "www.example.test", "A"]
            ).output
        }
        func answered(_ port: UInt16, _ daemon: RunningTool, source: String? = nil, _ name: String) throws -> String {
            var last = ""
            _ = try pollUntilBlocking(within: .seconds(20), every: .milliseconds(200)) {
                guard daemon.isRunning else { return true }
                last = try dig(port, source: source)
                return last.hasPrefix("198.51.100.") || last.hasPrefix("192.0.2.")
            }
            XCTAssertTrue(daemon.isRunning, "\(name) exited: \(String(decoding: daemon.stdout + daemon.stderr, as: UTF8.self))")
            return last
        }

        let stubbyPort = try Dnsmasq.freePort(on: loopback)
        let stubbyConfig = try write("stubby.yml", """
            resolution_type: GETDNS_RESOLUTION_STUB
            dns_transport_list:
              - GETDNS_TRANSPORT_TLS
            tls_authentication: GETDNS_AUTHENTICATION_REQUIRED
            tls_ca_file: "\(ca)"
            dnssec_return_status: GETDNS_EXTENSION_FALSE
            appdata_dir: "\(directory.path)"
            listen_addresses:
              - 127.0.0.1@\(stubbyPort)
            upstream_recursive_servers:
              - address_data: 127.0.0.1
                tls_port: \(dot)
                tls_auth_name: "\(Self.hostname)"
            """)
        let stubby = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/stubby"), arguments: ["-C", stubbyConfig])
        defer { stubby.send(SIGTERM) }
        XCTAssertEqual(try answered(stubbyPort, stubby, "stubby"), Self.loopbackView + "\n", "stubby")

        let unboundPort = try Dnsmasq.freePort(on: loopback)
        let unboundConfig = try write("unbound.conf", """
            server:
              interface: 127.0.0.1
              port: \(unboundPort)
              do-daemonize: no
              username: ""
              chroot: ""
              directory: "\(directory.path)"
              pidfile: ""
              use-syslog: no
              verbosity: 1
              do-ip6: no
              module-config: "iterator"
              qname-minimisation: no
              tls-cert-bundle: "\(ca)"
              access-control: 127.0.0.0/8 allow
              # The forwarder is on loopback, and .test is a special-use name Unbound answers itself.
              do-not-query-localhost: no
              local-zone: "test." nodefault
            remote-control:
              control-enable: no
            forward-zone:
              name: "."
              forward-tls-upstream: yes
              forward-addr: 127.0.0.1@\(dot)#\(Self.hostname)
            """)
        let unbound = try RunningTool(executable: URL(fileURLWithPath: "/usr/sbin/unbound"), arguments: ["-d", "-c", unboundConfig])
        defer { unbound.send(SIGTERM) }
        XCTAssertEqual(try answered(unboundPort, unbound, "unbound"), Self.loopbackView + "\n", "unbound forward-tls-upstream")

        // dnsdist passes its client's address as a /32 Client Subnet: asked from 127.0.0.2, serve
        // answers that address's view although the DoT connection comes from 127.0.0.1.
        let dnsdistPort = try Dnsmasq.freePort(on: loopback)
        let dnsdistConfig = try write("dnsdist.conf", """
            setSecurityPollSuffix("")
            setLocal("127.0.0.1:\(dnsdistPort)")
            setECSSourcePrefixV4(32)
            newServer({address="127.0.0.1:\(dot)", tls="openssl", subjectName="\(Self.hostname)", caStore="\(ca)",
                       useClientSubnet=true, checkName="www.example.test."})
            """)
        let dnsdist = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/dnsdist"), arguments: ["--supervised", "--disable-syslog", "-C", dnsdistConfig])
        defer { dnsdist.send(SIGTERM) }
        XCTAssertEqual(try answered(dnsdistPort, dnsdist, "dnsdist"), Self.loopbackView + "\n", "dnsdist DoT backend")
        XCTAssertEqual(try answered(dnsdistPort, dnsdist, source: "127.0.0.2", "dnsdist"), Self.secondView + "\n", "dnsdist's Client Subnet")

        // HAProxy in TCP mode passes the TLS bytes through with a PROXY v2 header first: a kdig on
        // 127.0.0.2 gets that address's view although serve's peer is HAProxy on 127.0.0.1. (HAProxy
        // refuses a configuration whose last line has no newline.)
        let haproxyPort = try Dnsmasq.freePort(on: loopback)
        let haproxyConfig = try write("haproxy.cfg", """
            defaults
              mode tcp
              timeout connect 1s
              timeout client 10s
              timeout server 10s
            frontend dot
              bind 127.0.0.1:\(haproxyPort)
              default_backend serve
            backend serve
              server s1 127.0.0.1:\(dot) send-proxy-v2

            """)
        let haproxy = try RunningTool(executable: URL(fileURLWithPath: "/usr/sbin/haproxy"), arguments: ["-db", "-f", haproxyConfig])
        defer { haproxy.send(SIGTERM) }
        var throughHAProxy = ""
        _ = try pollUntilBlocking(within: .seconds(10), every: .milliseconds(100)) {
            guard haproxy.isRunning else { return true }
            throughHAProxy = try client(
                "/usr/bin/kdig", ["-b", "127.0.0.2", "@127.0.0.1", "-p", String(haproxyPort), "+timeout=2", "+retry=0", "+short"]
                    + strict + ["www.example.test", "A"]
            ).output
            return !throughHAProxy.isEmpty
        }
        XCTAssertEqual(throughHAProxy, Self.secondView + "\n", "HAProxy's PROXY v2 header: \(String(decoding: haproxy.stderr, as: UTF8.self))")
    }
}
