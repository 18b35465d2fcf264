import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 33: the Debian package `make deb` builds (scripts/build-deb.sh) installs into a scratch
/// root and works from there: the installed binary runs without the Swift toolchain, its units
/// pass `systemd-analyze verify` (their binary and their man pages found), lintian reports no
/// error, and its maintainer scripts enable and start nothing.
///
/// The static release build is the slow part (many minutes the first time); scripts/install.sh
/// builds in .build-install, which a later run finds current, so only the packaging repeats: the
/// pages, gzip rather than xz (a third of the time), lintian.
final class PackageInstallTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func execute(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try RunningTool.runToEnd(program, arguments)
    }

    func testTheDebianPackageInstallsRunsAndItsUnitsVerify() throws {
        let out = try temporaryDirectory()
        let build = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["DEB_OUT=\(out.path)", "DEB_COMPRESSION=gzip", Self.root.appendingPathComponent("scripts/build-deb.sh").path])
        let status = try build.wait(timeout: .seconds(1800))
        let log = String(decoding: build.stderr, as: UTF8.self)
        XCTAssertEqual(status, 0, String(log.suffix(4000)))
        let deb = try XCTUnwrap(String(decoding: build.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init))
        XCTAssertTrue(deb.hasSuffix(".deb") && FileManager.default.fileExists(atPath: deb), deb)

        // The package's metadata: Depends from dpkg-shlibdeps names the C libraries the binary uses.
        let info = try execute("/usr/bin/dpkg-deb", ["--field", deb, "Package", "Depends"])
        XCTAssertEqual(info.status, 0, info.output)
        for library in ["libc6", "libcurl4", "libssl3", "libmaxminddb0", "libhiredis"] {
            XCTAssertTrue(info.output.contains(library), "Depends lacks \(library): \(info.output)")
        }
        XCTAssertFalse(info.output.contains("swift"), info.output)

        // lintian ran in build-deb.sh, which fails on any error (warnings are overridden in the
        // package, each with its reason) and prints what it reported.
        XCTAssertFalse(log.split(separator: "\n").contains { $0.hasPrefix("E: ") }, log)

        // Installed into a scratch root, the binary runs and needs no Swift library of the toolchain.
        let scratch = out.appendingPathComponent("root")
        let unpacked = try execute("/usr/bin/dpkg", ["-x", deb, scratch.path])
        XCTAssertEqual(unpacked.status, 0, unpacked.output)
        let binary = scratch.appendingPathComponent("usr/bin/httpdns").path
        let version = try execute(binary, ["--version"])
        XCTAssertEqual(version.status, 0, version.output)
        XCTAssertEqual(version.output, try run(["--version"]).stdoutText)
        let libraries = try execute("/usr/bin/ldd", [binary])
        XCTAssertFalse(libraries.output.contains("libswift") || libraries.output.contains("libFoundation"), libraries.output)
        XCTAssertFalse(libraries.output.contains("not found"), libraries.output)

        // The units verify, their ExecStart= pointed at the scratch binary and their Documentation=
        // at the scratch man pages.
        let units = ["httpdns-serve@.service", "httpdns-stub.service", "httpdns-stub.socket"]
        let unitDirectory = scratch.appendingPathComponent("lib/systemd/system")
        let verifyDirectory = out.appendingPathComponent("units")
        try FileManager.default.createDirectory(at: verifyDirectory, withIntermediateDirectories: true)
        for unit in units {
            let text = try String(contentsOf: unitDirectory.appendingPathComponent(unit), encoding: .utf8)
            XCTAssertTrue(text.contains("ExecStart=/usr/bin/httpdns ") || unit.hasSuffix(".socket"), "\(unit): \(text)")
            try Data(text.replacingOccurrences(of: "=/usr/bin/httpdns ", with: "=\(binary) ").utf8)
                .write(to: verifyDirectory.appendingPathComponent(unit.replacingOccurrences(of: "@.", with: "@example.")))
        }
        let verify = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["MANPATH=\(scratch.appendingPathComponent("usr/share/man").path):/usr/share/man", "systemd-analyze", "verify"]
                + ["httpdns-serve@example.service", "httpdns-stub.service", "httpdns-stub.socket"].map { verifyDirectory.appendingPathComponent($0).path })
        XCTAssertEqual(try verify.wait(timeout: .seconds(60)), 0)
        let verified = String(decoding: verify.stdout + verify.stderr, as: UTF8.self)
        XCTAssertEqual(verified, "", "systemd-analyze verify")

        // The maintainer scripts reload systemd and stop on removal; they never enable or start.
        let control = out.appendingPathComponent("control")
        XCTAssertEqual(try execute("/usr/bin/dpkg-deb", ["--control", deb, control.path]).status, 0)
        for script in ["postinst", "prerm", "postrm"] {
            let text = try String(contentsOf: control.appendingPathComponent(script), encoding: .utf8)
            let commands = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            XCTAssertFalse(commands.contains { $0.contains("enable") || $0.contains(" start") || $0.contains("restart") }, "\(script):\n\(text)")
        }
    }
}
