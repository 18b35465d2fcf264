#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Starts the processes tests use (servers, tools) with `posix_spawn`, never Foundation's `Process`:
/// corelibs' `Process.run()` scans `/proc/self/fd` with an over-read (swift-corelibs-foundation
/// issue 5472; AddressSanitizer reports it, and it can crash a normal run), and its monitor thread
/// can block on a child that closes inherited descriptors (dnsmasq does).
///
/// The child gets stdin from /dev/null (or a file or FIFO given), stdout and stderr in files, no other descriptor of ours, no
/// blocked signal (libdispatch worker threads block SIGTERM, and a mask is inherited) and default
/// handlers for the signals tests send.
enum Spawn {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// - Parameters:
    ///   - stdin: what the child reads. Default /dev/null. A FIFO must already have a writer open
    ///     (open it `O_RDWR` first), or the child blocks in its open before `exec`, and so does this call.
    ///   - append: append to the output files (a log shared by restarts) instead of truncating them.
    /// - Returns: the child's process identifier; reap it with `waitpid`.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: String = "/dev/null", stdout: String, stderr: String, append: Bool = false
    ) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let mode = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, mode, 0o600)
        if stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr, mode, 0o600)
        }
        _ = closeFrom?(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var nothing = sigset_t()
        sigemptyset(&nothing)
        posix_spawnattr_setsigmask(&attributes, &nothing)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environmentLines = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environmentLines.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw Failure(description: "cannot run \(executable): \(String(cString: strerror(result)))")
        }
        return child
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module does
    /// not import: looked up once; without it the child inherits what is not close-on-exec.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The exit status of a reaped child: its code, or 128 + the signal that ended it.
    static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
