import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// Issue 23's host-wide protection, in network namespaces of the test's own (``CarrierNetworks``):
/// the core is the carrier, whose resolver (dnsmasq on 198.19.0.53:53) lies about the site, with
/// the HTTPDNS service, an honest DNS server for the other record types (dnsmasq on
/// 198.19.0.54:5300, the stub's `udp=` upstream) and two HTTP origins: the real site and the
/// carrier's ad server. In one client namespace `httpdns stub` runs with its defaults (127.0.0.153:53)
/// and the namespace's resolv.conf (`/etc/netns/NAME/resolv.conf`, which `ip netns exec` mounts)
/// points at it; programs that know nothing of HTTPDNS — glibc's `getaddrinfo` (getent, Python),
/// curl, dig, kdig, dnspython — get the true address and reach the real site by name, and an
/// nftables counter shows no packet to port 53 leaving that namespace. A second client namespace,
/// pointed at the carrier's resolver, is the control: it gets the lie, and its counter counts.
final class StubNamespaceTests: XCTestCase {
    static let site = "www.example.test"
    static let real = "198.19.0.10"
    static let ad = "198.19.0.66"
    static let liar = "198.19.0.53"
    static let honest = "198.19.0.54"
    /// Names of the zone besides the site, for the lookups counted at the end.
    static let names = (0..<20).map { "n\($0).example.test" }

    private var networks: CarrierNetworks!
    private var directory: URL!
    private var tool: String!
    private var resolvConfs: [URL] = []
    private var protected: CarrierNetworks.Client { networks.clients[1]! }
    private var control: CarrierNetworks.Client { networks.clients[2]! }

    override func setUpWithError() throws {
        tool = try ToolRunner.locate().path
        networks = try CarrierNetworks(networks: [1, 2])
        do {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-stubns-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for address in [Self.liar, Self.honest, Self.ad] {
                try command("/usr/sbin/ip", ["-n", networks.core, "addr", "add", "\(address)/32", "dev", "lo"])
            }
            try startResolvers()
            try startOrigins()
            try startService()
            try resolvConf(protected, "nameserver 127.0.0.153\noptions timeout:2 attempts:2\n")
            try resolvConf(control, "nameserver \(Self.liar)\noptions timeout:2 attempts:2\n")
            for client in [protected, control] { try countPort53(client) }
        } catch {
            tearDown()
            throw error
        }
    }

    override func tearDown() {
        networks?.remove()
        for file in resolvConfs { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        resolvConfs = []
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testProgramsThatKnowNothingOfHTTPDNSGetTheTruthAndNoQueryLeavesOnPort53() throws {
        // The control: the carrier's resolver lies, and the counter sees its queries.
        XCTAssertEqual(try run(control, "/usr/bin/getent", ["ahosts", Self.site]).stdoutText.split(separator: " ").first, "\(Self.ad)")
        XCTAssertEqual(try run(control, "/usr/bin/curl", ["-s", "--max-time", "5", "http://\(Self.site)/"]).stdoutText, "ad server\n")
        XCTAssertGreaterThan(try port53Packets(control), 0, "the counter counts what goes to port 53")

        let stub = try networks.start(in: protected.namespace, tool, [
            "stub", "--provider", "dnspod=http://\(networks.serverAddress)", "--allow-private", "--upstream", "udp=\(Self.honest):5300",
        ])
        XCTAssertEqual(try stub.waitForLine(startingWith: "listening on ", timeout: .seconds(20)),
                       "listening on udp://127.0.0.153:53 tcp://127.0.0.153:53", "the default address")

        // glibc (getent, Python), curl, dig over UDP and TCP, kdig and dnspython: the true address.
        let getent = try run(protected, "/usr/bin/getent", ["ahosts", Self.site]).stdoutText
        XCTAssertEqual(Set(getent.split(separator: "\n").map { String($0.split(separator: " ")[0]) }), [Self.real], getent)
        let python = try run(protected, "/usr/bin/python3", ["-c", "import socket; print(sorted({a[4][0] for a in socket.getaddrinfo('\(Self.site)', 80)}))"])
        XCTAssertEqual(python.stdoutText, "['\(Self.real)']\n", python.stderrText)
        XCTAssertEqual(try run(protected, "/usr/bin/curl", ["-s", "--max-time", "5", "http://\(Self.site)/"]).stdoutText, "real origin\n", "the real site, by name")
        XCTAssertEqual(try run(protected, "/usr/bin/dig", ["+short", "+time=3", Self.site]).stdoutText, "\(Self.real)\n")
        XCTAssertEqual(try run(protected, "/usr/bin/dig", ["+short", "+tcp", "+time=3", Self.site]).stdoutText, "\(Self.real)\n")
        XCTAssertEqual(try run(protected, "/usr/bin/kdig", ["+short", "+timeout=3", Self.site]).stdoutText, "\(Self.real)\n")
        let dnspython = try run(protected, "/usr/bin/python3", ["-c", "import dns.resolver; print([r.address for r in dns.resolver.resolve('\(Self.site)', 'A')])"])
        XCTAssertEqual(dnspython.stdoutText, "['\(Self.real)']\n", dnspython.stderrText)

        // Every other type is answered as the upstream answers it.
        for (name, type) in [("mail.example.test", "MX"), ("txt.example.test", "TXT"), ("_sip._udp.example.test", "SRV"),
                             (Self.site, "HTTPS"), ("10.0.19.198.in-addr.arpa", "PTR")] {
            let direct = try run(networks.core, "/usr/bin/dig", ["+short", "+time=3", "@\(Self.honest)", "-p", "5300", name, type]).stdoutText
            XCTAssertFalse(direct.isEmpty, "the upstream answers \(name) \(type)")
            XCTAssertEqual(try run(protected, "/usr/bin/dig", ["+short", "+time=3", name, type]).stdoutText, direct, "\(name) \(type)")
        }

        // 10,000 lookups of protected names through getaddrinfo: none leaves on port 53.
        let lookups = try run(protected, "/usr/bin/python3", ["-c", """
            import socket
            names = \(Self.names)
            wrong = 0
            for i in range(10000):
                if socket.gethostbyname(names[i % len(names)]) != '\(Self.real)': wrong += 1
            print(wrong)
            """], timeout: .seconds(300))
        XCTAssertEqual(lookups.stdoutText, "0\n", "every lookup true: \(lookups.stderrText)")
        XCTAssertEqual(try port53Packets(protected), 0, "no query left the protected namespace for port 53")
        stub.send(SIGTERM)
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
        XCTAssertEqual(stub.sanitizerReports, [])
    }

    // MARK: - The carrier

    private func startResolvers() throws {
        try write(dnsmasq(Self.liar, port: 53, ["address=/example.test/\(Self.ad)"]), "liar.conf")
        try write(dnsmasq(Self.honest, port: 5300, [
            "mx-host=mail.example.test,mx1.example.test,10",
            #"txt-record=txt.example.test,"the upstream's text""#,
            "srv-host=_sip._udp.example.test,sip.example.test,5060,0,5",
            "dns-rr=\(Self.site),65,000100",
            "ptr-record=10.0.19.198.in-addr.arpa,\(Self.site)",
            "address=/example.test/\(Self.ad)",
        ]), "honest.conf")
        for name in ["liar", "honest"] {
            _ = try networks.start(in: networks.core, "/usr/sbin/dnsmasq", ["--keep-in-foreground", "--conf-file=\(file("\(name).conf"))"])
        }
        for (address, port) in [(Self.liar, "53"), (Self.honest, "5300")] {
            try waitFor("dnsmasq on \(address):\(port)") {
                try run(networks.core, "/usr/bin/dig", ["+short", "+time=1", "+tries=1", "@\(address)", "-p", port, "mail.example.test", "MX"]).status == 0
            }
        }
    }

    /// A dnsmasq configuration answering on `address`:`port` from `records` alone.
    private func dnsmasq(_ address: String, port: Int, _ records: [String]) -> String {
        (["port=\(port)", "listen-address=\(address)", "bind-interfaces", "no-resolv", "no-hosts", "no-poll", "pid-file=", "log-facility=-"]
            + (geteuid() == 0 ? ["user=root", "group=root"] : []) + records).joined(separator: "\n") + "\n"
    }

    private func startOrigins() throws {
        try networks.startNginx(in: directory, servers: """
              server { listen \(Self.real):80; location / { return 200 "real origin\\n"; } }
              server { listen \(Self.ad):80; location / { return 200 "ad server\\n"; } }
            """)
    }

    private func startService() throws {
        let entries = ([Self.site] + Self.names).map { "\"\($0)\": {\"A\": [\"\(Self.real)\"], \"ttl\": 300}" }
        try write("{\(entries.joined(separator: ", "))}", "zone.json")
        let server = try networks.start(in: networks.core, tool, ["serve", "--listen", "\(networks.serverAddress):80", "--zone", file("zone.json")])
        _ = try server.waitForLine(startingWith: "listening on ", timeout: .seconds(20))
    }

    // MARK: - The client namespaces

    /// `ip netns exec` mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf for what it runs.
    private func resolvConf(_ client: CarrierNetworks.Client, _ text: String) throws {
        let file = URL(fileURLWithPath: "/etc/netns/\(client.namespace)/resolv.conf")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        resolvConfs.append(file)
        try text.write(to: file, atomically: true, encoding: .utf8)
    }

    /// Counts the packets the namespace sends out of its link to port 53, UDP and TCP.
    private func countPort53(_ client: CarrierNetworks.Client) throws {
        try write("""
            table inet leak {
              chain output {
                type filter hook output priority 0; policy accept;
                oifname "eth0" udp dport 53 counter
                oifname "eth0" tcp dport 53 counter
              }
            }
            """, "leak.nft")
        let result = try run(client, "/usr/sbin/nft", ["-f", file("leak.nft")])
        guard result.status == 0 else { throw ToolRunner.Failure("nft in \(client.namespace): \(result.stderrText)") }
    }

    private func port53Packets(_ client: CarrierNetworks.Client) throws -> Int {
        let listing = try run(client, "/usr/sbin/nft", ["list", "table", "inet", "leak"]).stdoutText
        let counts = listing.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: "packets ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        guard counts.count == 2 else { throw ToolRunner.Failure("unexpected nft listing: \(listing)") }
        return counts.reduce(0, +)
    }

    // MARK: - Helpers

    private func run(_ client: CarrierNetworks.Client, _ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)) throws -> ToolRunner.Result {
        try run(client.namespace, executable, arguments, timeout: timeout)
    }

    private func run(_ namespace: String, _ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)) throws -> ToolRunner.Result {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ToolRunner.Failure("\(executable) not found: scripts/ensure-deps.sh installs it")
        }
        return try networks.run(in: namespace, executable, arguments, timeout: timeout)
    }

    private func command(_ executable: String, _ arguments: [String]) throws {
        let result = try ToolRunner(executable: URL(fileURLWithPath: executable)).run(arguments, timeout: .seconds(20))
        guard result.status == 0 else { throw ToolRunner.Failure("\(executable) \(arguments.joined(separator: " ")): \(result.stderrText)") }
    }

    private func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw ToolRunner.Failure("\(what) not ready within 20 s") }
            usleep(50_000)
        }
    }

    private func write(_ text: String, _ name: String) throws {
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    private func file(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }
}
