import Foundation
import HTTPDNS
import HTTPDNSTestSupport
import XCTest

/// Help, version and usage errors (exit 64 with a hint).
final class UsageTests: ToolTestCase {
    func testHelpOfToolAndEverySubcommandHasTheFamiliarShape() throws {
        for arguments in [["--help"], ["-h"], ["resolve", "--help"], ["fetch", "--help"], ["check", "-h"], ["serve", "--help"],
                          ["demo", "--help"], ["help", "fetch"]] {
            let result = try run(arguments)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderrText)")
            XCTAssertTrue(result.stdoutText.hasPrefix("OVERVIEW: "), "\(arguments): \(result.stdoutText)")
            XCTAssertTrue(result.stdoutText.contains("\nUSAGE: httpdns"), "\(arguments)")
            XCTAssertTrue(result.stdoutText.contains("\nOPTIONS:\n"), "\(arguments)")
            XCTAssertTrue(result.stdoutText.contains("-h, --help"), "\(arguments)")
        }
        let fetch = try run(["fetch", "--help"]).stdoutText
        for option in ["-X, --request <method>", "-H, --header", "--data-binary", "-o, --output", "-L, --location", "--fallback-ips",
                       "--provider <kind=url>", "--cacert"] {
            XCTAssertTrue(fetch.contains(option), "fetch help lacks \(option)")
        }
        let serve = try run(["serve", "--help"]).stdoutText
        for option in ["--listen", "--zone", "--upstream", "--tls-cert", "--tls-key", "--allow-private"] {
            XCTAssertTrue(serve.contains(option), "serve help lacks \(option)")
        }
        XCTAssertTrue(try run(["check", "--help"]).stdoutText.contains("--allow-private"))
    }

    /// With no --provider, the commands ask free public DoH services over HTTPS, reached through
    /// bootstrap addresses (issue 23): `--help` names them, and each is a valid provider. (Only
    /// read here: tests never send traffic off loopback.)
    func testTheDefaultProvidersArePublicDoHOverHTTPSWithBootstrapAddresses() throws {
        for command in ["resolve", "fetch", "check"] {
            let help = try run([command, "--help"]).stdoutText.replacingOccurrences(of: "\n", with: " ")
            let marker = try XCTUnwrap(help.range(of: "Default, in order: "), "\(command) --help names its default providers")
            let specs = help[marker.upperBound...].split(separator: " ").prefix(3)
                .map { String($0.trimmingCharacters(in: CharacterSet(charactersIn: ",."))) }
            XCTAssertEqual(specs, [
                "doh=https://doh.pub/dns-query?bootstrap=1.12.12.12,120.53.53.53",
                "doh=https://dns.alidns.com/dns-query?bootstrap=223.5.5.5,223.6.6.6",
                "doh=https://cloudflare-dns.com/dns-query?bootstrap=1.1.1.1,1.0.0.1",
            ], command)
            for text in specs {
                let spec = try HTTPDNSProviderSpec(parsing: text)
                XCTAssertNoThrow(try spec.makeResolver(), text)
            }
        }
    }

    func testVersion() throws {
        let result = try run(["--version"])
        XCTAssertEqual(result.status, 0)
        XCTAssertNotNil(result.stdoutText.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression), result.stdoutText)
    }

    func testUsageErrors() throws {
        let cases: [[String]] = [
            [],
            ["frobnicate"],
            ["resolve"],
            ["resolve", "--bogus", "a.example"],
            ["resolve", "--provider"],
            ["resolve", "--provider", "carrier-pigeon=http://x", "a.example"],
            ["resolve", "--provider", "dnspod=ftp://x", "a.example"],
            ["resolve", "--type", "MX", "a.example"],
            ["resolve", "--timeout", "soon", "a.example"],
            ["resolve", "--local-dns", "udp=nowhere", "a.example"],
            ["resolve", "--resolve", "a.example:80", "a.example"],
            ["check"],
            ["fetch"],
            ["fetch", "ftp://a.example/"],
            ["fetch", "-H", "no colon", "http://a.example/"],
            ["fetch", "-X", "GE T", "http://a.example/"],
            ["fetch", "--data-binary", "@/nonexistent/file", "http://a.example/"],
            ["fetch", "-i=1", "http://a.example/"],
            ["serve", "--listen", "localhost"],
            ["serve", "--tls-cert", "/tmp/x.pem"],
        ]
        for arguments in cases {
            let result = try run(arguments)
            assertUsage(result)
            if result.status != 64 { XCTFail("\(arguments) exited \(result.status)") }
        }
    }
}

/// Shipped products contain no test code: the `httpdns` binary carries no symbol of the test-support
/// module (nginx, dnsmasq and CA launchers), while `httpdns-demo`, which needs them, does.
final class ShippedToolTests: ToolTestCase {
    func testToolLinksNoTestSupportButTheDemoDoes() throws {
        let tool = try Data(contentsOf: runner.executable)
        let demo = try Data(contentsOf: runner.executable.deletingLastPathComponent().appendingPathComponent("httpdns-demo"))
        let marker = Data("HTTPDNSTestSupport".utf8)
        XCTAssertNil(tool.range(of: marker), "httpdns links test support")
        XCTAssertNotNil(demo.range(of: marker), "the check itself would not notice a linked module")
    }
}
