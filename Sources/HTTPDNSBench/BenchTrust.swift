import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Lets plain `URLSession` (row 4's baseline) trust the bench's private CA on Linux.
///
/// swift-corelibs-foundation gives `URLSession` no way to add a trust root on Linux (its
/// `URLSessionCertificateAuthorityInfoFile` variable is read on Android only): libcurl inside it
/// reads the system bundle `/etc/ssl/certs/ca-certificates.crt`. So, as root, the bench re-runs itself
/// under `unshare --mount --propagation private` and, once its CA exists, bind-mounts a copy of the
/// system bundle with the CA appended over the system file — visible to this process tree only, and
/// gone when it exits. Nothing on the machine's own trust store changes.
enum BenchTrust {
    static let marker = "HTTPDNS_BENCH_PRIVATE_MOUNTS"
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// True in the re-run process, where bind mounts stay private.
    static var inPrivateNamespace: Bool { ProcessInfo.processInfo.environment[marker] == "1" }

    /// Replaces this process with itself under `unshare`, when running as root and not yet done;
    /// returns (doing nothing) otherwise or when `unshare` cannot be run.
    static func enterPrivateMountNamespaceIfPossible() {
        let unshare = "/usr/bin/unshare"
        guard !inPrivateNamespace, geteuid() == 0, FileManager.default.isExecutableFile(atPath: unshare),
              let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        else { return }
        setenv(marker, "1", 1)
        let arguments = [unshare, "--mount", "--propagation", "private", executable] + CommandLine.arguments.dropFirst()
        var pointers = arguments.map { strdup($0) }
        pointers.append(nil)
        execv(unshare, &pointers)
        // Still here: exec failed; go on without (row 4 then reports why it cannot run).
        unsetenv(marker)
        for pointer in pointers { free(pointer) }
    }

    /// Makes the system bundle, for this process only, also hold `caPEM`.
    ///
    /// - Throws: ``BenchFailure`` outside the private namespace or when `mount` fails.
    static func trustForURLSession(caPEM: String, directory: URL) throws {
        guard inPrivateNamespace else {
            throw BenchFailure(
                "plain URLSession on Linux trusts only \(systemBundle); the bench needs root (to bind-mount a bundle with its CA in a private mount namespace)")
        }
        let system = (try? String(contentsOfFile: systemBundle, encoding: .utf8)) ?? ""
        let bundle = directory.appendingPathComponent("bundle-with-bench-ca.pem")
        try (system + "\n" + caPEM).write(to: bundle, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = ["--bind", bundle.path, systemBundle]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure("mount --bind of the CA bundle failed with status \(process.terminationStatus)")
        }
    }

    /// Undoes ``trustForURLSession(caPEM:directory:)`` (the namespace ends with the process anyway).
    static func untrust() {
        guard inPrivateNamespace else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = [systemBundle]
        try? process.run()
        process.waitUntilExit()
    }
}
