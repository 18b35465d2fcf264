@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// The one LRU of the engine's cache and the stub's wire cache, against a model.
final class LRUTableTests: XCTestCase {
    func testTheLeastRecentlyUsedGoesFirstAndATouchKeepsAnEntry() throws {
        var table = LRUTable<String, Int>(capacity: 2)
        table.set(1, forKey: "a")
        table.set(2, forKey: "b")
        table.touch(try XCTUnwrap(table.slot(of: "a")))
        table.set(3, forKey: "c")
        XCTAssertNil(table.peek("b"), "b was the least recently used")
        XCTAssertEqual(table.elements.map(\.key), ["c", "a"])
        XCTAssertEqual(table.count, 2)
    }

    func testPeekSlotAndChangesInPlaceLeaveTheOrder() throws {
        var table = LRUTable<String, [Int]>(capacity: 3)
        table.set([1], forKey: "a")
        table.set([2], forKey: "b")
        XCTAssertEqual(table.peek("a"), [1])
        let slot = try XCTUnwrap(table.slot(of: "a"))
        table[slot].append(10)
        XCTAssertEqual(table[slot], [1, 10])
        XCTAssertEqual(table.elements.map(\.key), ["b", "a"], "neither peek nor a change in place made a recent")
    }

    func testStoringAKeyAgainReplacesItAndMakesItRecent() {
        var table = LRUTable<String, Int>(capacity: 2)
        table.set(1, forKey: "a")
        table.set(2, forKey: "b")
        table.set(9, forKey: "a")
        XCTAssertEqual(table.elements.map(\.key), ["a", "b"])
        XCTAssertEqual(table.peek("a"), 9)
        XCTAssertEqual(table.count, 2)
    }

    func testRemoveFreesASlotThatIsReusedAndRemoveAllEmpties() {
        var table = LRUTable<Int, Int>(capacity: 4)
        for key in 0..<4 { table.set(key * 10, forKey: key) }
        XCTAssertEqual(table.remove(1), 10)
        XCTAssertNil(table.remove(1))
        table.set(50, forKey: 5)
        XCTAssertEqual(table.elements.map(\.key), [5, 3, 2, 0])
        table.removeAll()
        XCTAssertEqual(table.count, 0)
        XCTAssertTrue(table.elements.isEmpty)
        table.set(1, forKey: 1)
        XCTAssertEqual(table.elements.map(\.key), [1])
    }

    func testACapacityBelowOneKeepsOne() {
        var table = LRUTable<Int, Int>(capacity: 0)
        XCTAssertEqual(table.capacity, 1)
        table.set(1, forKey: 1)
        table.set(2, forKey: 2)
        XCTAssertEqual(table.elements.map(\.key), [2])
    }

    /// Random operations against an array kept in recency order.
    func testRandomOperationsMatchAModel() {
        var random = TestRandom()
        for capacity in [1, 2, 5, 16] {
            var table = LRUTable<Int, Int>(capacity: capacity)
            var model: [(key: Int, value: Int)] = []  // most recent first
            for step in 0..<2_000 {
                let key = Int.random(in: 0..<24, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    table.set(step, forKey: key)
                    model.removeAll { $0.key == key }
                    model.insert((key, step), at: 0)
                    if model.count > capacity { model.removeLast(model.count - capacity) }
                case 1:
                    XCTAssertEqual(table.remove(key), model.first { $0.key == key }?.value, "\(random)")
                    model.removeAll { $0.key == key }
                case 2:
                    if let slot = table.slot(of: key) {
                        table.touch(slot)
                        let entry = model.remove(at: model.firstIndex { $0.key == key }!)
                        model.insert(entry, at: 0)
                    } else {
                        XCTAssertFalse(model.contains { $0.key == key }, "\(random)")
                    }
                default:
                    XCTAssertEqual(table.peek(key), model.first { $0.key == key }?.value, "\(random)")
                }
                XCTAssertEqual(table.count, model.count, "\(random)")
            }
            XCTAssertEqual(table.elements.map(\.key), model.map(\.key), "\(random)")
            XCTAssertEqual(table.elements.map(\.value), model.map(\.value), "\(random)")
        }
    }
}
