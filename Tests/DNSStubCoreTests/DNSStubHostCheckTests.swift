import DNSStubCore
import HTTPDNSCore
import XCTest

/// `httpdns stub --check`'s parsing and verdict, without files: every way resolv.conf and
/// systemd-resolved can send names, and what glibc and resolved really do with each.
final class DNSStubHostCheckTests: XCTestCase {
    let stub = DNSStubResolvedConf.Server(address: HTTPDNSIPAddress("127.0.0.153")!)

    func check(_ resolvConf: String?, resolved: [String] = [], uplinks: String? = nil, link: String? = nil,
               listen: DNSStubResolvedConf.Server? = nil, answers: Bool? = nil) -> DNSStubHostCheck {
        var inputs = DNSStubHostCheck.Inputs(listen: listen ?? stub)
        inputs.resolvConf = resolvConf
        inputs.resolvConfLink = link
        inputs.resolvedConfs = resolved
        inputs.resolvedUplinks = uplinks
        inputs.stubAnswers = answers
        return DNSStubHostCheck(inputs)
    }

    func testResolvConfAtTheStubIsProtected() {
        let result = check("# written by hand\nnameserver 127.0.0.153\noptions edns0 trust-ad\nsearch lan\n", answers: true)
        XCTAssertEqual(result.verdict, .protected)
        XCTAssertEqual(result.verdictLine, "protected: every name goes to httpdns stub at 127.0.0.153:53")
        XCTAssertEqual(result.lines, [
            "resolv.conf: nameserver 127.0.0.153:53",
            "resolv.conf: search lan; options edns0 trust-ad",
            "httpdns stub: 127.0.0.153:53 answers",
        ])
    }

    func testResolvedWithTheStubAndRoutingDomainIsProtected() {
        let result = check(
            "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n",
            resolved: ["[Resolve]\n#DNS=\n#FallbackDNS=\n", "[Resolve]\nDNS=127.0.0.153\nDomains=~.\nFallbackDNS=\n"],
            uplinks: "nameserver 127.0.0.153\nnameserver 192.168.1.1\n",
            link: "../run/systemd/resolve/stub-resolv.conf")
        XCTAssertEqual(result.verdict, .protected, result.verdictLine)
        XCTAssertTrue(result.verdictLine.hasPrefix("protected: every name goes to httpdns stub at 127.0.0.153:53 through systemd-resolved"), result.verdictLine)
        XCTAssertEqual(result.lines[0], "resolv.conf: nameserver 127.0.0.53:53; a link to ../run/systemd/resolve/stub-resolv.conf (systemd-resolved's stub file)")
        XCTAssertTrue(result.lines.contains("systemd-resolved: DNS=127.0.0.153:53 Domains=~. FallbackDNS=(empty) DNSStubListener=yes"), "\(result.lines)")
        XCTAssertTrue(result.lines.contains("systemd-resolved: servers in use (/run/systemd/resolve/resolv.conf): 127.0.0.153, 192.168.1.1"), "\(result.lines)")
        XCTAssertTrue(result.lines.contains("httpdns stub: 127.0.0.153:53 (not probed)"), "\(result.lines)")
    }

    /// resolv.conf linked to resolved's list of its servers: glibc skips resolved and asks them all.
    func testResolvConfLinkedToResolvedsServerList() {
        let result = check("nameserver 127.0.0.153\nnameserver 192.168.1.1\n", resolved: ["[Resolve]\nDNS=127.0.0.153\nDomains=~.\n"],
                           link: "/run/systemd/resolve/resolv.conf")
        XCTAssertEqual(result.lines[0], "resolv.conf: nameserver 127.0.0.153:53, 192.168.1.1:53; a link to /run/systemd/resolve/resolv.conf (systemd-resolved's own servers: glibc asks them directly)")
        XCTAssertEqual(result.verdict, .notProtected, "the link's DHCP server is asked whenever the stub is slow")
    }

    func testResolvedWithoutRoutingDomainIsPartlyProtected() {
        let result = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.153\n"])
        XCTAssertEqual(result.verdict, .partlyProtected)
        XCTAssertEqual(result.verdictLine, "partly protected: systemd-resolved sends names to 127.0.0.153:53 but without Domains=~. it also asks each link's DNS, and names under link domains go only there")
    }

    func testResolvedWithAnotherServerOrNoneOrNoListenerIsNotProtected() {
        let other = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.153 9.9.9.9\nDomains=~.\n"])
        XCTAssertEqual(other.verdict, .notProtected)
        XCTAssertEqual(other.verdictLine, "NOT protected: systemd-resolved also sends names to 9.9.9.9:53 (not the stub)")
        let none = check("nameserver 127.0.0.53\n", resolved: [""])
        XCTAssertEqual(none.verdict, .notProtected)
        XCTAssertTrue(none.verdictLine.contains("systemd-resolved has no DNS="), none.verdictLine)
        // An empty assignment resets the list: the drop-in's DNS= empties the main file's.
        let reset = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.153\nDomains=~.\n", "[Resolve]\nDNS=\n"])
        XCTAssertEqual(reset.verdict, .notProtected)
        let noListener = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.153\nDomains=~.\nDNSStubListener=no\n"])
        XCTAssertEqual(noListener.verdict, .notProtected)
        XCTAssertTrue(noListener.verdictLine.contains("DNSStubListener=no"), noListener.verdictLine)
        let missing = check("nameserver 127.0.0.53\n")
        XCTAssertEqual(missing.verdict, .notProtected)
        XCTAssertTrue(missing.verdictLine.contains("configuration was not found"), missing.verdictLine)
    }

    func testResolvedWithThePortSyntax() {
        let listen = DNSStubResolvedConf.Server(address: HTTPDNSIPAddress("127.0.0.1")!, port: 5353)
        let result = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.1:5353\nDomains=~.\n"], listen: listen)
        XCTAssertEqual(result.verdict, .protected, result.verdictLine)
        let wrongPort = check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.1\nDomains=~.\n"], listen: listen)
        XCTAssertEqual(wrongPort.verdict, .notProtected, "127.0.0.1:53 is not the stub on port 5353")
        // resolv.conf cannot name a port: the stub on 5353 is never reached from it.
        let direct = check("nameserver 127.0.0.1\n", listen: listen)
        XCTAssertEqual(direct.verdictLine, "NOT protected: resolv.conf sends names to 127.0.0.1:53 (resolv.conf can only name port 53; the stub listens on 127.0.0.1:5353)")
    }

    func testAnotherServerIsNotProtected() {
        let result = check("nameserver 192.168.1.1\n")
        XCTAssertEqual(result.verdict, .notProtected)
        XCTAssertEqual(result.verdictLine, "NOT protected: resolv.conf sends names to 192.168.1.1:53 (not the stub)")
    }

    /// glibc asks the next nameserver when one times out: the stub first is not enough.
    func testSeveralNameserversWhereOneIsNotTheStubLeak() {
        let result = check("nameserver 127.0.0.153\nnameserver 1.1.1.1\n")
        XCTAssertEqual(result.verdict, .notProtected)
        XCTAssertEqual(result.verdictLine, "NOT protected: resolv.conf also lists 1.1.1.1:53: glibc asks the next nameserver whenever the one before does not answer in time")
        // Past the third (MAXNS), a nameserver is never asked.
        let fourth = check("nameserver 127.0.0.153\nnameserver 127.0.0.153\nnameserver 127.0.0.153\nnameserver 8.8.8.8\n")
        XCTAssertEqual(fourth.verdict, .protected, fourth.verdictLine)
        XCTAssertTrue(fourth.lines[0].contains("nameservers past the third are never asked"), fourth.lines[0])
    }

    /// No nameserver at all: glibc asks 127.0.0.1:53; a missing file the same.
    func testEmptyAndMissingFilesMeanLocalhost() {
        for text in ["", nil, "# nothing\n; nothing\n"] as [String?] {
            let result = check(text)
            XCTAssertEqual(result.verdict, .notProtected)
            XCTAssertEqual(result.verdictLine, "NOT protected: resolv.conf sends names to 127.0.0.1:53 (not the stub)")
        }
        XCTAssertEqual(check(nil).lines[0], "resolv.conf: nameserver missing (no nameserver line: glibc asks 127.0.0.1:53)")
        let onStub = check("", listen: DNSStubResolvedConf.Server(address: HTTPDNSIPAddress("127.0.0.1")!))
        XCTAssertEqual(onStub.verdict, .protected, "the stub on 127.0.0.1:53 is what glibc asks")
    }

    func testGarbageLinesAreIgnoredAsGlibcDoes() {
        let result = check("\u{0}\u{1}garbage\nnameserver\nnameserver not-an-address\n  nameserver 127.0.0.153  \r\nnameserver fe80::1%eth0\nfoo bar\n")
        XCTAssertEqual(result.verdict, .notProtected)
        XCTAssertEqual(result.verdictLine, "NOT protected: resolv.conf also lists [fe80::1]:53: glibc asks the next nameserver whenever the one before does not answer in time")
        XCTAssertEqual(result.lines[1], "resolv.conf: ignored lines: \u{0}\u{1}garbage | nameserver | nameserver not-an-address | foo bar")
        let resolved = DNSStubResolvedConf(parsing: ["DNS=1.1.1.1\n[Resolve]\nDNS=bogus [::1]:5353 [::1 10.0.0.1:99999 ::2 10.0.0.2:5300%eth0#dns.example\nno equals\n[Other]\nDNS=9.9.9.9\n"])
        XCTAssertEqual(resolved.dns.map(\.description), ["[::1]:5353", "[::2]:53", "10.0.0.2:5300"], "outside [Resolve] ignored")
        XCTAssertEqual(resolved.ignored, ["bogus", "[::1", "10.0.0.1:99999", "no equals"])
    }

    func testProbeResultIsReported() {
        let result = check("nameserver 127.0.0.153\n", answers: false)
        // Wired to the stub, but nothing answers there: every lookup fails. Not "protected" (issue 32).
        XCTAssertEqual(result.verdict, .notAnswering, "a stub that is down makes lookups fail, not leak")
        XCTAssertTrue(result.verdictLine.hasPrefix("NOT answering: every name goes to httpdns stub at 127.0.0.153:53"), result.verdictLine)
        XCTAssertTrue(result.lines.contains("httpdns stub: 127.0.0.153:53 does not answer (no reply within 1 s): names would fail, not leak"), "\(result.lines)")
        let leaking = check("nameserver 10.0.0.1\n", answers: false)
        XCTAssertTrue(leaking.lines.contains("httpdns stub: 127.0.0.153:53 does not answer (no reply within 1 s)"), "\(leaking.lines)")
        XCTAssertEqual(leaking.verdict, .notProtected, "names leak to 10.0.0.1 whatever the stub does")
    }
}

extension DNSStubHostCheckTests {
    /// The main file from the highest directory that has one; drop-ins from all four, /etc hiding the
    /// same name under /usr/lib, sorted by name across directories.
    func testResolvedConfigurationFilesInSystemdOrder() {
        let present: Set<String> = ["/usr/lib/systemd/resolved.conf", "/run/systemd/resolved.conf"]
        let listings = [
            "/etc/systemd/resolved.conf.d": ["90-local.conf", "50-vendor.conf", "README"],
            "/run/systemd/resolved.conf.d": ["70-run.conf"],
            "/usr/lib/systemd/resolved.conf.d": ["50-vendor.conf", "10-first.conf"],
        ]
        let files = DNSStubResolvedConf.files(exists: present.contains, list: { listings[$0] ?? [] })
        XCTAssertEqual(files, [
            "/run/systemd/resolved.conf",
            "/usr/lib/systemd/resolved.conf.d/10-first.conf",
            "/etc/systemd/resolved.conf.d/50-vendor.conf",
            "/run/systemd/resolved.conf.d/70-run.conf",
            "/etc/systemd/resolved.conf.d/90-local.conf",
        ])
        XCTAssertEqual(DNSStubResolvedConf.files(exists: { _ in false }, list: { _ in [] }), [])
    }

    /// A stub on every address (`--listen 0.0.0.0:53`) is reached through any loopback address.
    func testStubOnTheUnspecifiedAddress() {
        let any = DNSStubResolvedConf.Server(address: HTTPDNSIPAddress("0.0.0.0")!)
        XCTAssertEqual(check("nameserver 127.0.0.1\n", listen: any).verdict, .protected)
        XCTAssertEqual(check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=127.0.0.1\nDomains=~.\n"], listen: any).verdict, .protected)
        XCTAssertEqual(check("nameserver 127.0.0.53\n", resolved: ["[Resolve]\nDNS=9.9.9.9\nDomains=~.\n"], listen: any).verdict, .notProtected,
                       "127.0.0.53 is resolved's, even with the stub on every address")
        XCTAssertEqual(check("nameserver 10.0.0.1\n", listen: any).verdict, .notProtected)
        XCTAssertEqual(check("nameserver ::1\n", listen: any).verdict, .notProtected, "an IPv4 socket does not take IPv6")
    }
}
