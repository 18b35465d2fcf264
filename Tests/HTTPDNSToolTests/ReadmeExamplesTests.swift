import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// The README's Swift code is real: every ```swift block of the README is an `Examples/` program
/// verbatim, so is every block of a DocC article that names an `Examples/` file, every example is
/// shown in the README or an article, and the programs, built by `make test` as a separate package
/// depending on this one, run against loopback servers.
final class ReadmeExamplesTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The ```swift blocks of the Markdown file at `path` (relative to the package).
    private func swiftBlocks(in path: String) throws -> [String] {
        let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        XCTAssertNil(current, "a ```swift block of \(path) is not closed")
        return blocks
    }

    /// The DocC articles, as paths relative to the package.
    private func articles() throws -> [String] {
        let documentation = Self.root.appendingPathComponent("Documentation")
        var paths: [String] = []
        for catalogue in try FileManager.default.contentsOfDirectory(atPath: documentation.path) where catalogue.hasSuffix(".docc") {
            let folder = documentation.appendingPathComponent(catalogue)
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".md") {
                paths.append("Documentation/\(catalogue)/\(name)")
            }
        }
        XCTAssertFalse(paths.isEmpty, "no DocC articles found")
        return paths.sorted()
    }

    /// The `Examples/` file a block names on its first line (`// Examples/Sources/NAME/main.swift — …`).
    private func examplePath(of block: String) -> String? {
        let first = block.prefix { $0 != "\n" }
        guard first.hasPrefix("// Examples/"), let path = first.dropFirst(3).split(separator: " ").first else { return nil }
        return String(path)
    }

    /// Checks `block` against the file it names, and returns that file's path.
    private func checkVerbatim(_ block: String, in document: String) throws -> String? {
        guard let path = examplePath(of: block) else { return nil }
        let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        XCTAssertEqual(block, text, "\(document)'s block differs from \(path)")
        return path
    }

    func testEveryReadmeSwiftBlockIsAnExampleVerbatimAndEveryExampleIsShown() throws {
        var shown = Set<String>()
        let readmeBlocks = try swiftBlocks(in: "README.md")
        XCTAssertFalse(readmeBlocks.isEmpty)
        for block in readmeBlocks {
            // The README shows only programs that are built and run: each names its Examples/ file.
            guard let path = try checkVerbatim(block, in: "README.md") else {
                XCTFail("a README swift block does not start with its Examples/ path: \(block.prefix { $0 != "\n" })")
                continue
            }
            shown.insert(path)
        }
        // An article may also show a snippet that is not a program; one that names an example is it.
        for article in try articles() {
            for block in try swiftBlocks(in: article) {
                if let path = try checkVerbatim(block, in: article) { shown.insert(path) }
            }
        }
        let sources = Self.root.appendingPathComponent("Examples/Sources")
        for name in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            XCTAssertTrue(shown.contains("Examples/Sources/\(name)/main.swift"),
                          "Examples/Sources/\(name) is shown neither in the README nor in a DocC article")
        }
    }

    /// A built example program (`make test` builds the Examples package first).
    private func example(_ name: String) throws -> ToolRunner {
        let candidates = ["Examples/.build/debug/\(name)", "Examples/.build/x86_64-unknown-linux-gnu/debug/\(name)"]
            .map { Self.root.appendingPathComponent($0) }
        guard let built = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MissingPrerequisite("example \(name) is not built: run `swift build --package-path Examples` (make test does)")
        }
        return try ToolRunner(executable: built)
    }

    /// A plain HTTP origin for www.example.test on 127.0.0.1, and the HTTPDNS service that knows it.
    private func bed() throws -> (url: String, provider: String) {
        let origin = try HTTPServer(configuration: .init()) { request in .text("the real www.example.test\n") }
        addCleanup { origin.stop() }
        let provider = "dnspod=" + (try startService(zone: #"{"www.example.test": {"A": ["127.0.0.1"], "ttl": 60}}"#))
        return ("http://www.example.test:\(origin.port)/", provider)
    }

    func testProtectURLSessionExampleReachesTheRealSite() throws {
        let (url, provider) = try bed()
        let result = try example("ProtectURLSession").run([url, provider, "--allow-private"])
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("HTTP 200"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("the real www.example.test"), result.stdoutText)
    }

    func testProtectProcessExampleReachesTheRealSiteThroughTheProxy() throws {
        let (url, provider) = try bed()
        // A lying LocalDNS would not matter here: the proxy resolves through HTTPDNS, and the program
        // itself resolves nothing (corelibs sends the name in the proxy request, unresolved).
        let result = try example("ProtectProcess").run([url, provider, "--allow-private"])
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("HTTP 200"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("the real www.example.test"), result.stdoutText)
    }

    func testEmbedServerExampleAnswersFromItsZone() throws {
        let zone = try temporaryDirectory().appendingPathComponent("zone.json")
        try #"{"www.example.test": {"A": ["127.0.0.7"], "ttl": 60}}"#.write(to: zone, atomically: true, encoding: .utf8)
        let result = try example("EmbedServer").run([zone.path, "www.example.test"])
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("listening on 127.0.0.1:"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("www.example.test -> 127.0.0.7"), result.stdoutText)
    }

    func testDirectClientExampleResolvesFetchesStreamsAndChecks() throws {
        let (url, provider) = try bed()
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let result = try example("DirectClient").run([url, provider, "udp=127.0.0.1:\(liar.port)", "--allow-private"])
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("www.example.test -> 127.0.0.1"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("HTTP 200, 26 bytes"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("streamed HTTP 200, 26 bytes"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("LocalDNS lies about www.example.test"), result.stdoutText)
    }
}

/// A missing prerequisite that must fail the test, never skip it.
private struct MissingPrerequisite: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
