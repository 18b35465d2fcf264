import HTTPDNSCore
import XCTest

/// The default loop count follows the affinity mask, read from `/proc/self/status`.
final class HTTPDNSProcessorsTests: XCTestCase {
    func testCPUListsCountTheirCPUs() {
        let lists: [(String, Int?)] = [
            ("0", 1), ("0-1", 2), ("0,2-5,8", 6), ("3-3", 1), ("0-63", 64), ("1,1", 2),
            ("", nil), ("-1", nil), ("1-", nil), ("3-1", nil), ("0-1-2", nil), ("a", nil), ("0,,1", nil),
            ("+1", nil), ("0x1", nil), ("123456", nil), ("0-99999999999999999999", nil),
        ]
        for (list, expected) in lists {
            XCTAssertEqual(HTTPDNSProcessors.count(list: list[...]), expected, list)
        }
    }

    func testTheAllowedListIsFoundInAStatusText() {
        let status = "Name:\thttpdns\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n"
        XCTAssertEqual(HTTPDNSProcessors.allowedCount(status: status), 2)
        XCTAssertNil(HTTPDNSProcessors.allowedCount(status: "Name:\thttpdns\n"))
        XCTAssertNil(HTTPDNSProcessors.allowedCount(status: "Cpus_allowed_list:\t0 1\n"))
        XCTAssertNil(HTTPDNSProcessors.allowedCount(status: "Cpus_allowed_list:\n"))
    }

    /// This process's own figure: at least one, and no more than the machine has online.
    func testUsableIsBetweenOneAndTheOnlineCPUs() {
        XCTAssertGreaterThanOrEqual(HTTPDNSProcessors.usable, 1)
        XCTAssertLessThanOrEqual(HTTPDNSProcessors.usable, max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
