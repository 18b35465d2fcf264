import Foundation
import XCTest

/// The configuration reference (the DocC article `ConfigurationReference.md`) lists every public
/// field of the three configurations a user fills in, read from the recorded public API
/// (`api/public-api.txt`, which `make api-check` keeps equal to the code): a field added without a
/// row fails here.
final class ConfigurationReferenceTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    private static let article = "Documentation/HTTPDNSNetworking.docc/ConfigurationReference.md"

    /// The configurations, the article's line that opens each table, and how a recorded path becomes
    /// the name in the table (`HTTPDNSConfiguration.Timeouts.perAttempt` → `timeouts.perAttempt`).
    private static let tables: [(type: String, heading: String)] = [
        ("HTTPDNSConfiguration", "`HTTPDNSConfiguration` (the engine"),
        ("HTTPDNSClient.Configuration", "`HTTPDNSClient.Configuration` (route 1"),
        ("HTTPDNSProxy.Configuration", "`HTTPDNSProxy.Configuration` (route 2"),
    ]

    /// The rows of the table under `heading`: the first cell of each `| … |` line up to the first
    /// line that is not part of a table.
    private func rows(under heading: String, in article: String) throws -> Set<String> {
        let lines = article.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix(heading) }, "no table for \(heading) in \(Self.article)")
        var names = Set<String>()
        var inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("|") {
                inTable = true
                let cell = line.split(separator: "|", omittingEmptySubsequences: true).first?.trimmingCharacters(in: .whitespaces) ?? ""
                if cell.hasPrefix("`"), cell.hasSuffix("`") { names.insert(String(cell.dropFirst().dropLast())) }
            } else if inTable {
                break
            }
        }
        return names
    }

    /// The public stored fields (`var`) of `type` and its nested settings structs, as table names.
    private func fields(of type: String, in record: String) -> Set<String> {
        var names = Set<String>()
        for line in record.split(separator: "\n") {
            let columns = line.components(separatedBy: "  ")
            guard columns.count >= 4, columns[3].hasPrefix("var "), columns[2].hasPrefix(type + ".") else { continue }
            let path = columns[2].dropFirst(type.count + 1).split(separator: ".").map(String.init)
            // A nested struct's field: `Timeouts.perAttempt` is reached as `timeouts.perAttempt`.
            let named = path.enumerated().map { index, part in
                index < path.count - 1 ? part.prefix(1).lowercased() + part.dropFirst() : part
            }
            // Fields of value types defined elsewhere (HTTPDNSCacheSettings) are not the configuration's own.
            guard named.count <= 2 else { continue }
            names.insert(named.joined(separator: "."))
        }
        // A group (`timeouts`) is listed by its fields (`timeouts.perAttempt`), not as a row of its own.
        return names.filter { name in !names.contains { $0.hasPrefix(name + ".") } }
    }

    func testEveryConfigurationFieldHasARowWithItsDefault() throws {
        let article = try String(contentsOf: Self.root.appendingPathComponent(Self.article), encoding: .utf8)
        let record = try String(contentsOf: Self.root.appendingPathComponent("api/public-api.txt"), encoding: .utf8)
        for (type, heading) in Self.tables {
            let fields = fields(of: type, in: record)
            XCTAssertGreaterThan(fields.count, 5, "no fields of \(type) found in the API record")
            let rows = try rows(under: heading, in: article)
            for field in fields.sorted() where !rows.contains(field) {
                XCTFail("\(type).\(field) is public but has no row in \(Self.article)")
            }
            for row in rows.sorted() where !fields.contains(row) {
                XCTFail("\(Self.article)'s \(type) table lists `\(row)`, which is not a public field")
            }
        }
    }
}
