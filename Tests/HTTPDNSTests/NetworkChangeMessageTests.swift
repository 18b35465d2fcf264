import HTTPDNS
import HTTPDNSTestSupport
import XCTest

/// The watcher's reading of rtnetlink datagrams, byte by byte (the namespace tests cover the
/// kernel's real messages).
final class NetworkChangeMessageTests: XCTestCase {
    // linux/rtnetlink.h
    private let newAddress: UInt16 = 20, deleteAddress: UInt16 = 21, newRoute: UInt16 = 24, deleteRoute: UInt16 = 25
    private let newLink: UInt16 = 16
    private let mainTable: UInt8 = 254, localTable: UInt8 = 255

    /// One netlink message: a 16-byte nlmsghdr in host order, then the payload, padded to 4 bytes.
    private func message(type: UInt16, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(16 + payload.count)) { bytes += $0 }
        withUnsafeBytes(of: type) { bytes += $0 }
        bytes += [0, 0] + [UInt8](repeating: 0, count: 8)  // flags, sequence, port
        bytes += payload
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    /// An rtmsg (12 bytes) for a route with `prefixLength` in `table`.
    private func route(prefixLength: UInt8, table: UInt8) -> [UInt8] {
        [10, prefixLength, 0, 0, table, 4, 0, 1] + [0, 0, 0, 0]
    }

    /// An ifaddrmsg (8 bytes).
    private let address: [UInt8] = [2, 24, 0, 0, 2, 0, 0, 0]

    func testNetworkChangeMessagesThatCount() {
        XCTAssertTrue(HTTPDNSNetworkWatcher.reportsChange(message(type: newAddress, payload: address)))
        XCTAssertTrue(HTTPDNSNetworkWatcher.reportsChange(message(type: deleteAddress, payload: address)))
        XCTAssertTrue(HTTPDNSNetworkWatcher.reportsChange(message(type: newRoute, payload: route(prefixLength: 0, table: mainTable))))
        XCTAssertTrue(HTTPDNSNetworkWatcher.reportsChange(message(type: deleteRoute, payload: route(prefixLength: 0, table: mainTable))))
        XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(message(type: newRoute, payload: route(prefixLength: 24, table: mainTable))))
        XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(message(type: newRoute, payload: route(prefixLength: 0, table: localTable))))
        XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(message(type: newLink, payload: address)))
        // Several messages in one datagram: any one that counts is enough.
        let datagram = message(type: newRoute, payload: route(prefixLength: 24, table: mainTable)) + message(type: newAddress, payload: address)
        XCTAssertTrue(HTTPDNSNetworkWatcher.reportsChange(datagram))
    }

    func testNetworkChangeMessagesTruncatedOrMalformedAreReadWithinBounds() {
        let whole = message(type: newRoute, payload: route(prefixLength: 0, table: mainTable))
        for length in 0..<whole.count {
            // A message whose length runs past the datagram is not read at all.
            XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(Array(whole[..<length])), "truncated to \(length)")
        }
        // A route message too short to hold its rtmsg.
        var short = message(type: newRoute, payload: [0, 0, 0, 0])
        XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(short))
        // A zero or tiny length must not loop forever or read backwards.
        short.replaceSubrange(0..<4, with: [0, 0, 0, 0])
        XCTAssertFalse(HTTPDNSNetworkWatcher.reportsChange(short + message(type: newAddress, payload: address)))
        var generator = TestRandom()  // the seed is printed first: a crash here can be repeated
        for _ in 0..<2_000 {
            let noise = (0..<Int.random(in: 0...96, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = HTTPDNSNetworkWatcher.reportsChange(noise)
        }
    }
}
