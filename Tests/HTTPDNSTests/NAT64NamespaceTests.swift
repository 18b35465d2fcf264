#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// ``HTTPDNSAddressFamily/auto`` on real networks, each in a namespace of its own: an IPv6-only
/// network with a DNS64 resolver (Debian's unbound with its dns64 module, configured here), where
/// the engine must discover the NAT64 prefix through `ipv4only.arpa` and reach an IPv4-only name at
/// the synthesized address; and a dual-stack network, where it must ask for both families.
///
/// The agent inside the namespace runs an HTTPDNS service that only knows `origin.example A
/// 198.51.100.10`, resolves it with `.auto` and fetches it from an origin listening on the first
/// address of the answer (the test puts that address on the namespace's loopback).
final class NAT64NamespaceTests: XCTestCase {
    /// The prefix the DNS64 uses: a network-specific /64, where the IPv4 address straddles the
    /// u octet (RFC 6052 section 2.2), rather than the simpler well-known /96.
    private let prefix = "2001:db8:64:1::/64"
    /// 198.51.100.10 in that prefix, as RFC 6052 lays it out.
    private let synthesized = "2001:db8:64:1:c6:3364:a00:0"
    private let dnsPort = 5353

    /// Starts unbound in `namespace` on [::1]:dnsPort, with DNS64 in front of two local zones
    /// served as if from upstream (`auth-zone` with `for-upstream`, so the dns64 module sees them;
    /// `local-data` would bypass it): `ipv4only.arpa` with the well-known addresses and `example`.
    private func startDNS64(in namespace: NetworkNamespace, directory: URL) throws -> RunningTool {
        let soa = "@ 3600 IN SOA localhost. nobody.invalid. 1 3600 1200 604800 60\n@ 3600 IN NS localhost.\n"
        try ("$ORIGIN ipv4only.arpa.\n" + soa + "@ 3600 IN A 192.0.0.170\n@ 3600 IN A 192.0.0.171\n")
            .write(to: directory.appendingPathComponent("ipv4only.zone"), atomically: true, encoding: .utf8)
        try ("$ORIGIN example.\n" + soa + "origin 60 IN A 198.51.100.10\n")
            .write(to: directory.appendingPathComponent("example.zone"), atomically: true, encoding: .utf8)
        let zones = ["ipv4only.arpa", "example"].map { zone in
            """
            auth-zone:
                name: "\(zone)."
                zonefile: "\(directory.path)/\(zone == "example" ? "example" : "ipv4only").zone"
                for-downstream: no
                for-upstream: yes
                fallback-enabled: no
            """
        }.joined(separator: "\n")
        let configuration = """
            server:
                interface: ::1@\(dnsPort)
                port: \(dnsPort)
                do-daemonize: no
                use-syslog: no
                logfile: ""
                chroot: ""
                username: ""
                pidfile: ""
                directory: "\(directory.path)"
                do-ip4: no
                access-control: ::1/128 allow
                module-config: "dns64 iterator"
                dns64-prefix: \(prefix)
            \(zones)

            """
        let path = directory.appendingPathComponent("unbound.conf")
        try configuration.write(to: path, atomically: true, encoding: .utf8)
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/unbound") else {
            throw ToolRunner.Failure("/usr/sbin/unbound is missing (Debian package unbound; scripts/ensure-deps.sh installs it)")
        }
        let unbound = try namespace.start("/usr/sbin/unbound", ["-d", "-c", path.path])
        // Ready when it answers the discovery query with a synthesized address.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let dig = try namespace.run("/usr/bin/dig", ["+short", "+time=1", "+tries=1", "@::1", "-p", String(dnsPort), "ipv4only.arpa", "AAAA"])
            if dig.stdoutText.contains("2001:db8:64:1:") { return unbound }
            guard unbound.isRunning else {
                throw ToolRunner.Failure("unbound exited: \(String(decoding: unbound.stderr, as: UTF8.self))")
            }
            usleep(100_000)
        }
        throw ToolRunner.Failure("unbound did not answer within 20 s: \(String(decoding: unbound.stderr, as: UTF8.self))")
    }

    private func values(_ result: ToolRunner.Result) -> [String: String] {
        var values: [String: String] = [:]
        for line in result.stdoutLines {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    func testNAT64OnAnIPv6OnlyNetworkSynthesizesAddressesFromIPv4Answers() throws {
        let namespace = try NetworkNamespace()
        try namespace.addLink()
        try namespace.ip("addr", "add", "2001:db8:1::2/64", "dev", "v0", "nodad")
        try namespace.ip("-6", "route", "add", "default", "via", "2001:db8:1::1", "dev", "v0")
        // The origin answers where a NAT64 would deliver the translated connection.
        try namespace.ip("addr", "add", "\(synthesized)/128", "dev", "lo", "nodad")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-nat64-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let unbound = try startDNS64(in: namespace, directory: directory)
        defer { unbound.send(SIGTERM) }

        let result = try namespace.run(try NetworkNamespace.agent(), ["auto", String(dnsPort)])
        let found = values(result)
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertEqual(found["prefix"], prefix, "discovered through ipv4only.arpa (RFC 7050)")
        XCTAssertEqual(found["family"], "both", "IPv4 answers are usable through NAT64")
        XCTAssertEqual(found["addresses"], synthesized, "the HTTPDNS answer 198.51.100.10, synthesized (RFC 6052)")
        XCTAssertEqual(found["source"]?.hasPrefix("dnspod"), true, "answered by HTTPDNS, not LocalDNS")
        XCTAssertEqual(found["status"], "200")
        XCTAssertEqual(found["body"], "through NAT64")
        XCTAssertEqual(found["served-by"], synthesized)
        XCTAssertEqual(found["host-header"]?.hasPrefix("origin.example"), true)
    }

    func testNAT64NotUsedOnADualStackNetwork() throws {
        let namespace = try NetworkNamespace()
        try namespace.addLink()
        try namespace.ip("addr", "add", "10.9.0.2/24", "dev", "v0")
        try namespace.ip("route", "add", "default", "via", "10.9.0.1")
        try namespace.ip("addr", "add", "2001:db8:1::2/64", "dev", "v0", "nodad")
        try namespace.ip("-6", "route", "add", "default", "via", "2001:db8:1::1", "dev", "v0")
        try namespace.ip("addr", "add", "198.51.100.10/32", "dev", "lo")
        // No DNS server at all: a dual-stack network needs no discovery.
        let result = try namespace.run(try NetworkNamespace.agent(), ["auto", String(dnsPort)])
        let found = values(result)
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertEqual(found["family"], "both")
        XCTAssertEqual(found["prefix"], "none")
        XCTAssertEqual(found["addresses"], "198.51.100.10")
        XCTAssertEqual(found["status"], "200")
        XCTAssertEqual(found["served-by"], "198.51.100.10")
    }
}

