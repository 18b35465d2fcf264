import Foundation
import HTTPDNSFuzzTargets
import XCTest

/// Every fuzz target's property over its whole checked-in corpus (`Fuzz/Corpus/<target>/`): what a
/// fuzzing run found and kept stays fixed.
final class FuzzCorpusTests: XCTestCase {
    static let corpusRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus")

    func testEveryTargetHasASeedCorpus() throws {
        for target in HTTPDNSFuzzTarget.all {
            XCTAssertFalse(try corpus(target.name).isEmpty, "\(target.name) has no seeds")
        }
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpusRoot.path).sorted()
        XCTAssertEqual(folders, HTTPDNSFuzzTarget.all.map(\.name).sorted(), "a corpus folder without a target")
    }

    func testEveryCorpusHoldsItsProperty() throws {
        var inputs = 0
        for target in HTTPDNSFuzzTarget.all {
            for (name, bytes) in try corpus(target.name) {
                inputs += 1
                do {
                    try target.run(bytes)
                } catch {
                    XCTFail("\(target.name)/\(name): \(error)")
                }
            }
        }
        XCTAssertGreaterThan(inputs, HTTPDNSFuzzTarget.all.count)
    }

    private func corpus(_ name: String) throws -> [(String, [UInt8])] {
        let folder = Self.corpusRoot.appendingPathComponent(name)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        return try names.map { ($0, Array(try Data(contentsOf: folder.appendingPathComponent($0)))) }
    }
}
