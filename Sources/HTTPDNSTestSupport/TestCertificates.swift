import Foundation
import HTTPDNSCore

/// A private certificate authority made at test time with the `openssl` command, and leaf
/// certificates it issues for chosen DNS names and IP addresses.
///
/// Keys are EC P-256 so that making a CA and a few leaves takes milliseconds. Everything lives in
/// a fresh temporary directory; call ``remove()`` when done.
package struct TestCertificates: Sendable {
    /// A certificate and its key.
    package struct Leaf: Sendable {
        /// The leaf certificate, PEM.
        package var certificatePEM: String
        /// The leaf's private key, PEM (PKCS #8).
        package var keyPEM: String
        /// Where ``certificatePEM`` is stored.
        package var certificatePath: String
        /// Where ``keyPEM`` is stored.
        package var keyPath: String
    }

    /// Why the `openssl` command failed.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The directory holding every file.
    package let directory: URL
    /// The CA certificate, PEM: trust this to accept the leaves.
    package let caCertificatePEM: String
    /// Where ``caCertificatePEM`` is stored.
    package let caCertificatePath: String
    private let caKeyPath: String

    /// Makes a new CA in a new temporary directory.
    ///
    /// - Parameter commonName: the CA's subject CN.
    /// - Throws: ``Failure`` when `openssl` is missing or fails.
    package init(commonName: String = "swift-httpdns test CA") throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("httpdns-certs-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let certificate = directory.appendingPathComponent("ca.pem").path
        let key = directory.appendingPathComponent("ca.key").path
        try Self.openssl([
            "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "3", "-subj", "/CN=\(commonName)",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        self.caCertificatePath = certificate
        self.caKeyPath = key
        self.caCertificatePEM = try String(contentsOfFile: certificate, encoding: .utf8)
    }

    /// Issues a server certificate for `dnsNames` and `ipAddresses` (subjectAltName entries).
    ///
    /// - Parameters:
    ///   - dnsNames: DNS names, wildcards allowed (`*.example.test`).
    ///   - ipAddresses: IP addresses for `IP:` entries.
    ///   - validDays: validity from now, at least 1.
    package func issue(dnsNames: [String], ipAddresses: [HTTPDNSIPAddress] = [], validDays: Int = 2) throws -> Leaf {
        let name = UUID().uuidString
        let key = directory.appendingPathComponent("\(name).key").path
        let request = directory.appendingPathComponent("\(name).csr").path
        let certificate = directory.appendingPathComponent("\(name).pem").path
        let extensions = directory.appendingPathComponent("\(name).ext").path
        let alternativeNames = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0.description)" }
        var lines = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature",
            "extendedKeyUsage=serverAuth",
        ]
        if !alternativeNames.isEmpty { lines.append("subjectAltName=" + alternativeNames.joined(separator: ",")) }
        try (lines.joined(separator: "\n") + "\n").write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", request, "-subj", "/CN=\(dnsNames.first ?? "test leaf")",
        ])
        let arguments = [
            "x509", "-req", "-in", request, "-CA", caCertificatePath, "-CAkey", caKeyPath,
            "-set_serial", "0x" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(30),
            "-out", certificate, "-extfile", extensions, "-days", String(max(1, validDays)),
        ]
        try Self.openssl(arguments)
        return Leaf(
            certificatePEM: try String(contentsOfFile: certificate, encoding: .utf8),
            keyPEM: try String(contentsOfFile: key, encoding: .utf8),
            certificatePath: certificate, keyPath: key)
    }

    /// Deletes the directory and every key in it.
    package func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func openssl(_ arguments: [String]) throws {
        let process: RunningTool
        do {
            process = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/openssl"), arguments: arguments)
        } catch {
            throw Failure(description: "cannot run /usr/bin/openssl: \(error)")
        }
        guard try process.wait(timeout: .seconds(60)) == 0 else {
            throw Failure(
                description: "openssl \(arguments.first ?? "") failed: \(String(decoding: process.stderr, as: UTF8.self))")
        }
    }
}
