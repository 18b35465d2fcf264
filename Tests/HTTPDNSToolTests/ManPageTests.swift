import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 33: the man pages (man/*.md through scripts/build-man.sh) build with nothing for
/// `mandoc -T lint` to say, `man -l` renders each, and each page's OPTIONS are exactly the options
/// its `--help` lists: both come from the option table, and this holds the build script to it.
final class ManPageTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each page and the arguments that print its `--help`.
    private static let pages: [(page: String, help: [String])] = [
        ("httpdns.1", ["--help"]),
        ("httpdns-resolve.1", ["resolve", "--help"]),
        ("httpdns-fetch.1", ["fetch", "--help"]),
        ("httpdns-check.1", ["check", "--help"]),
        ("httpdns-proxy.1", ["proxy", "--help"]),
        ("httpdns-demo.1", ["demo", "--help"]),
        ("httpdns-serve.8", ["serve", "--help"]),
        ("httpdns-stub.8", ["stub", "--help"]),
        ("httpdns-zone.5", []),
    ]

    /// A program to its end, with its status and both streams.
    private func execute(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try RunningTool.runToEnd(program, arguments)
    }

    func testPagesBuildLintCleanRenderAndListExactlyTheHelpOptions() throws {
        let out = try temporaryDirectory()
        let build = try execute("/usr/bin/env", [
            "HTTPDNS=\(runner.executable.path)", "MAN_OUT=\(out.path)", Self.root.appendingPathComponent("scripts/build-man.sh").path,
        ])
        XCTAssertEqual(build.status, 0, build.output)
        let built = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        XCTAssertEqual(built, Self.pages.map(\.page).sorted())

        for (page, helpArguments) in Self.pages {
            let path = out.appendingPathComponent(page).path
            let lint = try execute("/usr/bin/mandoc", ["-T", "lint", path])
            XCTAssertEqual(lint.output, "", "mandoc -T lint \(page)")
            XCTAssertEqual(lint.status, 0, lint.output)
            let rendered = try execute("/usr/bin/man", ["-l", path])
            XCTAssertEqual(rendered.status, 0, rendered.output)
            XCTAssertTrue(rendered.output.contains("NAME") && rendered.output.contains("SEE ALSO"), "\(page): \(rendered.output.prefix(500))")
            // Nothing for groff to complain of either (the pages are set ragged-right, unhyphenated).
            XCTAssertEqual(rendered.output.split(separator: "\n").filter { $0.contains("troff:") }, [], page)

            guard !helpArguments.isEmpty else { continue }
            let help = try run(helpArguments)
            XCTAssertEqual(help.status, 0, help.stderrText)
            let roff = try String(contentsOfFile: path, encoding: .utf8)
            let difference = Self.compare(help: help.stdoutText, roff: roff)
            XCTAssertTrue(Self.helpOptions(help.stdoutText).contains("help"), page)
            XCTAssertEqual(difference.notInPage, [], "\(page) lacks options of `httpdns \(helpArguments.joined(separator: " "))`")
            XCTAssertEqual(difference.notInHelp, [], "\(page) has options its --help lacks")
        }
        // The generated parts are there: every serve config key, the stub's exit statuses.
        let serve = try String(contentsOfFile: out.appendingPathComponent("httpdns-serve.8").path, encoding: .utf8)
        XCTAssertTrue(serve.contains("\\f[B]trustedProxies\\f[R]"), "serve's CONFIGURATION KEYS")
        let stub = try String(contentsOfFile: out.appendingPathComponent("httpdns-stub.8").path, encoding: .utf8)
            .replacingOccurrences(of: "\n", with: " ")
        XCTAssertTrue(stub.contains("2 names go to the stub and nothing answers there"), "stub's EXIT STATUS")
    }

    /// The comparison fails either way: an option only in `--help`, and one only in the page.
    func testTheComparisonFindsAnOptionMissingOnEitherSide() {
        let help = """
            OVERVIEW: x

            USAGE: httpdns x

            OPTIONS:
              --listen <ip:port>          Where.
                                          --wrapped-mention is not an option row.
              -v, --verbose               Say more.
              -h, --help                  Show help information.

            EXIT STATUS:
              0 success.
            """
        let roff = """
            .SH OPTIONS
            .TP
            \\f[B]--listen\\f[R] \\f[I]ip:port\\f[R]
            Where.
            .TP
            \\f[B]-h\\f[R], \\f[B]--help\\f[R]
            Show help information.
            .TP
            \\f[B]--extra\\f[R]
            Only here.
            .SH EXIT STATUS
            .TP
            \\f[B]--not-an-option-row\\f[R]
            """
        let difference = Self.compare(help: help, roff: roff)
        XCTAssertEqual(difference.notInPage, ["verbose"])
        XCTAssertEqual(difference.notInHelp, ["extra"])
        XCTAssertEqual(Self.compare(help: help, roff: roff.replacingOccurrences(of: "--extra", with: "--verbose")).notInHelp, [])
    }

    /// The long options of a `--help` text's OPTIONS rows (a row starts two spaces in).
    private static func helpOptions(_ help: String) -> Set<String> {
        let section = help.components(separatedBy: "\nOPTIONS:\n").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("  -") }
        return Set(rows.flatMap { longOptions(in: String($0.prefix { $0 != "<" })) })
    }

    /// The long options of a page's OPTIONS section: the term line after each `.TP`.
    private static func pageOptions(_ roff: String) -> Set<String> {
        let section = roff.components(separatedBy: ".SH OPTIONS\n").dropFirst().first?.components(separatedBy: "\n.SH ").first ?? ""
        let lines = section.split(separator: "\n", omittingEmptySubsequences: false)
        let terms = zip(lines, lines.dropFirst()).filter { $0.0 == ".TP" }.map { String($0.1) }
        return Set(terms.flatMap { longOptions(in: $0.replacingOccurrences(of: "\\-", with: "-")) })
    }

    private static func longOptions(in text: String) -> [String] {
        text.matches(of: /--([a-z0-9][a-z0-9-]*)/).map { String($0.output.1) }
    }

    private static func compare(help: String, roff: String) -> (notInPage: [String], notInHelp: [String]) {
        let inHelp = helpOptions(help)
        let inPage = pageOptions(roff)
        return (inHelp.subtracting(inPage).sorted(), inPage.subtracting(inHelp).sorted())
    }
}
