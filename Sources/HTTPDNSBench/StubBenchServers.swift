import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Row 11's servers on 127.0.0.1, each a child process: the authority (dnsmasq with every bench
/// name), the HTTPDNS provider (`httpdns serve` with the same names), and the three DNS servers
/// compared: `httpdns stub` (A of protected names through the engine), dnsdist with a packet cache
/// and Unbound (forwarding), both in front of the authority; plus a second stub whose names go to
/// a DoH upstream (the provider's /dns-query) for the cold miss and the wire cache's memory.
final class StubBenchServers: @unchecked Sendable {
    static let dnsmasq = "/usr/sbin/dnsmasq"
    static let dnsdist = "/usr/bin/dnsdist"
    static let unbound = "/usr/sbin/unbound"

    /// One DNS server under load: where it listens and the process whose CPU time is read.
    struct Target {
        var name: String
        var port: UInt16
        var pid: Int32
    }

    let stub: Target
    let dnsdist: Target
    let unbound: Target
    /// The stub asking the DoH upstream (nothing protected).
    let dohStub: Target
    /// The provider's DoH endpoint, as the DoH stub asks it.
    let dohURL: String
    /// A DoH upstream a network away: every answer 1 ms late (this kernel has no netem, so the
    /// server delays), in this process.
    let distantUpstream: FakeDoHUpstream
    /// A stub asking only ``distantUpstream`` (nothing protected).
    let distantStub: Target
    private var processes: [BenchProcess] = []

    /// - Parameter names: every name the servers know (`n<i>.bench.test`, A 10.x.y.z, TTL 3600).
    init(httpdns: String, names: [String], directory: URL) throws {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        func port() throws -> UInt16 { try Dnsmasq.freePort(on: loopback) }
        let (authority, provider, stubPort, dnsdistPort, unboundPort, dohStubPort) = (try port(), try port(), try port(), try port(), try port(), try port())
        dohURL = "http://127.0.0.1:\(provider)/dns-query"
        func file(_ name: String, _ text: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let addresses = names.indices.map { "10.\($0 >> 16 & 0xFF).\($0 >> 8 & 0xFF).\($0 & 0xFF)" }
        var started: [BenchProcess] = []
        @discardableResult
        func start(_ name: String, _ executable: String, _ arguments: [String], _ directory: URL, port: UInt16) throws -> BenchProcess {
            guard FileManager.default.isExecutableFile(atPath: executable) else {
                throw BenchFailure("\(executable) not found: make bench installs it (scripts/ensure-deps.sh --bench)")
            }
            let process = try BenchProcess(name, executable, arguments)
            started.append(process)
            try process.waitForListener(port)
            return process
        }
        do {
            let dnsmasqConfig = try file("authority.conf", """
                no-resolv
                no-hosts
                no-poll
                bind-interfaces
                pid-file=
                listen-address=127.0.0.1
                port=\(authority)
                local-ttl=3600
                cache-size=0
                \(geteuid() == 0 ? "user=root\ngroup=root" : "")
                \(zip(names, addresses).map { "host-record=\($0),\($1)" }.joined(separator: "\n"))
                """)
            try start("authority", Self.dnsmasq, ["--keep-in-foreground", "--conf-file=\(dnsmasqConfig)"], directory, port: authority)
            let zone = try file("zone.json", "{" + zip(names, addresses).map { #""\#($0)": {"A": ["\#($1)"], "ttl": 3600}"# }.joined(separator: ", ") + "}")
            try start("provider", httpdns, ["serve", "--listen", "127.0.0.1:\(provider)", "--zone", zone], directory, port: provider)
            let stubProcess = try start("httpdns stub", httpdns, [
                "stub", "--listen", "127.0.0.1:\(stubPort)", "--provider", "dnspod=http://127.0.0.1:\(provider)", "--allow-private",
                "--upstream", "udp=127.0.0.1:\(authority)", "--timeout", "2",
            ], directory, port: stubPort)
            stub = Target(name: "httpdns stub", port: stubPort, pid: stubProcess.pid)
            let dohStubProcess = try start("httpdns stub (DoH)", httpdns, [
                "stub", "--listen", "127.0.0.1:\(dohStubPort)", "--provider", "dnspod=http://127.0.0.1:\(provider)", "--allow-private",
                "--protect", "nothing.invalid", "--upstream", "doh=\(dohURL)", "--timeout", "2",
            ], directory, port: dohStubPort)
            dohStub = Target(name: "httpdns stub (DoH)", port: dohStubPort, pid: dohStubProcess.pid)
            distantUpstream = try FakeDoHUpstream()
            distantUpstream.delay = .milliseconds(1)
            let distantStubPort = try port()
            let distantStubProcess = try start("httpdns stub (distant DoH)", httpdns, [
                "stub", "--listen", "127.0.0.1:\(distantStubPort)", "--provider", "dnspod=http://127.0.0.1:\(provider)", "--allow-private",
                "--protect", "nothing.invalid", "--upstream", "doh=\(distantUpstream.url)", "--timeout", "2",
            ], directory, port: distantStubPort)
            distantStub = Target(name: "httpdns stub (distant DoH)", port: distantStubPort, pid: distantStubProcess.pid)
            // dnsdist: one UDP/TCP listener, the authority as its backend, a packet cache; no security
            // polling (it would query the network).
            let dnsdistConfig = try file("dnsdist.conf", """
                setSecurityPollSuffix("")
                setLocal("127.0.0.1:\(dnsdistPort)")
                newServer({address="127.0.0.1:\(authority)", checkName="\(names[0])."})
                getPool(""):setCache(newPacketCache(\(max(10_000, names.count * 2)), {maxTTL=86400}))
                """)
            let dnsdistProcess = try start("dnsdist", Self.dnsdist, ["--supervised", "--disable-syslog", "-C", dnsdistConfig], directory, port: dnsdistPort)
            dnsdist = Target(name: "dnsdist", port: dnsdistPort, pid: dnsdistProcess.pid)
            // Unbound: one thread, forwarding everything to the authority, no validation.
            let unboundConfig = try file("unbound.conf", """
                server:
                  interface: 127.0.0.1@\(unboundPort)
                  port: \(unboundPort)
                  do-daemonize: no
                  chroot: ""
                  username: ""
                  pidfile: ""
                  directory: "\(directory.path)"
                  use-syslog: no
                  logfile: ""
                  num-threads: 1
                  access-control: 127.0.0.0/8 allow
                  do-not-query-localhost: no
                  module-config: "iterator"
                  msg-cache-size: 64m
                  rrset-cache-size: 128m
                  prefetch: no
                  # test. is one of its special-use names (NXDOMAIN by default, RFC 6761).
                  local-zone: "test." nodefault
                forward-zone:
                  name: "."
                  forward-addr: 127.0.0.1@\(authority)
                remote-control:
                  control-enable: no
                """)
            let unboundProcess = try start("unbound", Self.unbound, ["-d", "-c", unboundConfig], directory, port: unboundPort)
            unbound = Target(name: "unbound", port: unboundPort, pid: unboundProcess.pid)
        } catch {
            for process in started { process.stop() }
            throw error
        }
        processes = started
    }

    func stop() {
        distantUpstream.stop()
        for process in processes { process.stop() }
        processes = []
    }
}
