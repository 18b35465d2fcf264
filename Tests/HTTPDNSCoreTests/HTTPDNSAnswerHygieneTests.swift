import HTTPDNSCore
import XCTest

final class HTTPDNSAnswerHygieneTests: XCTestCase {
    /// Duplicates are dropped and order kept, both for short answers (compared directly) and long
    /// ones (through a set); bogons are rejected unless allowed.
    func testDeduplicatesKeepsOrderAndRejectsBogons() {
        let hygiene = HTTPDNSAnswerHygiene()
        let short = ["198.51.100.2", "10.0.0.1", "198.51.100.1", "198.51.100.2", "127.0.0.1", "10.0.0.1"].map { ip($0) }
        let outcome = hygiene.filter(short)
        XCTAssertEqual(outcome.kept, ["198.51.100.2", "198.51.100.1"].map { ip($0) })
        XCTAssertEqual(outcome.rejected, ["10.0.0.1", "127.0.0.1"].map { ip($0) })

        let long = (0..<40).map { ip("198.51.100.\($0 % 25)") } + [ip("0.0.0.0"), ip("198.51.100.3")]
        let longOutcome = hygiene.filter(long)
        XCTAssertEqual(longOutcome.kept, (0..<25).map { ip("198.51.100.\($0)") })
        XCTAssertEqual(longOutcome.rejected, [ip("0.0.0.0")])

        let permissive = HTTPDNSAnswerHygiene(allowPrivate: true).filter(short)
        XCTAssertEqual(permissive.kept, ["198.51.100.2", "10.0.0.1", "198.51.100.1", "127.0.0.1"].map { ip($0) })
        XCTAssertEqual(permissive.rejected, [])
    }

    /// One switch: allowing private answers allows loopback too (as `--allow-private` does); the
    /// unspecified addresses are never accepted.
    func testAllowPrivateAcceptsLoopbackAndPrivateButNeverUnspecified() {
        let permissive = HTTPDNSAnswerHygiene(allowPrivate: true)
        for text in ["127.0.0.1", "::1", "10.0.0.5", "192.168.1.1", "fd00::1", "198.51.100.7"] {
            XCTAssertTrue(permissive.accepts(ip(text)), text)
        }
        for text in ["0.0.0.0", "::"] {
            XCTAssertFalse(permissive.accepts(ip(text)), text)
        }
        XCTAssertFalse(HTTPDNSAnswerHygiene().accepts(ip("127.0.0.1")))
    }
}
