import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Lets plain `URLSession` trust the bed's private CA, for this process only.
///
/// swift-corelibs-foundation gives `URLSession` no way to add a trust root on Linux: libcurl inside
/// it reads the system bundle. So the runner re-runs itself under `unshare --mount --propagation
/// private` (as root) and bind-mounts a copy of the system bundle with the CA appended over the
/// system file: visible to this process tree only, gone when it exits (the bench does the same).
public enum DifferentialTrust {
    static let marker = "HTTPDNS_DIFFERENTIAL_PRIVATE_MOUNTS"
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// Replaces this process with itself under `unshare` when not done yet; returns only when
    /// already inside (or throws why it cannot be).
    ///
    /// As root a mount namespace suffices; otherwise a user namespace mapping the user to root
    /// gives one (where the kernel allows unprivileged user namespaces).
    public static func enterPrivateMountNamespace() throws {
        guard ProcessInfo.processInfo.environment[marker] != "1" else { return }
        let unshare = "/usr/bin/unshare"
        guard FileManager.default.isExecutableFile(atPath: unshare),
              let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        else { throw DifferentialFailure("\(unshare) (util-linux) is needed") }
        setenv(marker, "1", 1)
        let namespaces = geteuid() == 0 ? ["--mount"] : ["--user", "--map-root-user", "--mount"]
        let arguments = [unshare] + namespaces + ["--propagation", "private", executable] + CommandLine.arguments.dropFirst()
        var pointers = arguments.map { strdup($0) }
        pointers.append(nil)
        execv(unshare, &pointers)
        throw DifferentialFailure("exec \(unshare) failed: errno \(errno)")
    }

    /// Makes the system bundle, for this process only, also hold the CA at `caPath`.
    public static func trust(caPath: String, scratch: String) throws {
        let system = (try? String(contentsOfFile: systemBundle, encoding: .utf8)) ?? ""
        let ca = try String(contentsOfFile: caPath, encoding: .utf8)
        let bundle = URL(fileURLWithPath: scratch).appendingPathComponent("bundle-\(getpid()).pem")
        try (system + "\n" + ca).write(to: bundle, atomically: true, encoding: .utf8)
        let status = try run("/bin/mount", ["--bind", bundle.path, systemBundle])
        guard status == 0 else {
            throw DifferentialFailure("mount --bind of the CA bundle failed with status \(status)")
        }
    }

    /// Runs a program and waits for it (`posix_spawn` and `waitpid`: Foundation's `Process` waits
    /// on the main run loop, which this runner does not spin).
    static func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
        var pointers = ([executable] + arguments).map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, nil, nil, &pointers, environ)
        guard spawned == 0 else { throw DifferentialFailure("cannot start \(executable): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

/// Why a runner could not run a scenario.
public struct DifferentialFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
