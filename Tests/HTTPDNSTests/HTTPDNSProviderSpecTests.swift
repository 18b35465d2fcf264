import HTTPDNS
import HTTPDNSCore
import XCTest

final class HTTPDNSProviderSpecTests: XCTestCase {
    private func rejects(_ text: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try HTTPDNSProviderSpec(parsing: text).makeResolver()
            XCTFail("\(text) accepted", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .invalidConfiguration, file: file, line: line)
            XCTAssertTrue(error.detail.contains(fragment), "\(error.detail)", file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }

    func testKindsAndNames() throws {
        XCTAssertEqual(try HTTPDNSProviderSpec(parsing: "system").makeResolver().name, "system")
        XCTAssertEqual(try HTTPDNSProviderSpec(parsing: "udp=127.0.0.1:5353").makeResolver().name, "udp 127.0.0.1:5353")
        XCTAssertEqual(try HTTPDNSProviderSpec(parsing: "udp=[::1]:53").makeResolver().name, "udp [::1]:53")
        XCTAssertEqual(try HTTPDNSProviderSpec(parsing: "DNSPOD=http://127.0.0.1:8053").kind, .dnspod)
    }

    func testSecretsAreMaskedInNames() throws {
        let dnspod = try HTTPDNSProviderSpec(parsing: "dnspod=http://127.0.0.1:1?id=7&key=s3cret&alg=aes").makeResolver()
        XCTAssertFalse(dnspod.name.contains("s3cret"), dnspod.name)
        let alibaba = try HTTPDNSProviderSpec(parsing: "alibaba=http://127.0.0.1:1/100000?secret=hush").makeResolver()
        XCTAssertFalse(alibaba.name.contains("hush"), alibaba.name)
    }

    func testBadSpecsAreRejectedWithAReason() {
        rejects("carrier-pigeon=http://x", "unknown provider kind")
        rejects("dnspod", "needs a location")
        rejects("dnspod=ftp://127.0.0.1/", "not an http(s) URL")
        rejects("dnspod=http://127.0.0.1:1?colour=blue", "unknown parameter colour")
        rejects("dnspod=http://127.0.0.1:1?alg=rot13&id=1&key=k", "des or aes")
        rejects("dnspod=http://127.0.0.1:1?alg=aes", "needs id and key")
        rejects("alibaba=http://127.0.0.1:1", "account ID")
        rejects("alibaba=http://127.0.0.1:1/100000?api=v9", "legacy or v2")
        rejects("udp=127.0.0.1", "IP:PORT")
        rejects("udp=::1:53", "IP:PORT")
        rejects("doh=http://127.0.0.1:1/dns-query?bootstrap=not-an-ip", "bootstrap")
    }
}
