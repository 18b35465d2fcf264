import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// The README's Swift code is real: every ```swift block is an `Examples/` program verbatim (and every
/// example is in the README), and the programs, built by `make test` as a separate package depending
/// on this one, run against loopback servers.
final class ReadmeExamplesTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The README's ```swift blocks.
    private func readmeSwiftBlocks() throws -> [String] {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        XCTAssertNil(current, "a ```swift block is not closed")
        return blocks
    }

    func testEveryReadmeSwiftBlockIsAnExampleVerbatimAndEveryExampleIsShown() throws {
        let blocks = try readmeSwiftBlocks()
        XCTAssertFalse(blocks.isEmpty)
        var shown = Set<String>()
        for block in blocks {
            // Each block names its file on its first line: `// Examples/Sources/NAME/main.swift — …`.
            let first = block.prefix { $0 != "\n" }
            guard first.hasPrefix("// "), let path = first.dropFirst(3).split(separator: " ").first else {
                XCTFail("a README swift block does not start with its Examples/ path: \(first)")
                continue
            }
            let file = Self.root.appendingPathComponent(String(path))
            let text = try String(contentsOf: file, encoding: .utf8)
            XCTAssertEqual(block, text, "README block differs from \(path)")
            shown.insert(String(path))
        }
        let sources = Self.root.appendingPathComponent("Examples/Sources")
        for name in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            XCTAssertTrue(shown.contains("Examples/Sources/\(name)/main.swift"), "Examples/Sources/\(name) is not in the README")
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
