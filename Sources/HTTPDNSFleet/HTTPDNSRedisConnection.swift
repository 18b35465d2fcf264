#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CHiredis

/// A blocking hiredis connection: connect, `AUTH`, `SELECT`, then pipelined commands, each call
/// bounded by its timeout.
///
/// Not thread-safe and not `Sendable` on purpose: it blocks, so only the report sharer's own thread
/// owns and uses it (never the cooperative pool, never a query).
final class HTTPDNSRedisConnection {
    private var context: UnsafeMutablePointer<redisContext>

    /// Opens a connection and authenticates.
    ///
    /// - Throws: ``HTTPDNSRedisError`` `.connect`, `.auth`, `.select` or `.io`.
    init(_ settings: HTTPDNSRedisSettings) throws(HTTPDNSRedisError) {
        let connectTimeout = Self.timeval(settings.connectTimeout)
        let opened: UnsafeMutablePointer<redisContext>?
        switch settings.endpoint {
        case .tcp(let host, let port): opened = redisConnectWithTimeout(host, Int32(port), connectTimeout)
        case .unix(let path): opened = redisConnectUnixWithTimeout(path, connectTimeout)
        }
        guard let opened else { throw HTTPDNSRedisError(.connect, "out of memory") }
        guard opened.pointee.err == 0 else {
            let detail = Self.errorText(opened)
            redisFree(opened)
            throw HTTPDNSRedisError(.connect, detail)
        }
        // From here a throw releases the object, and deinit frees the context (once).
        context = opened
        guard redisSetTimeout(context, Self.timeval(settings.commandTimeout)) == REDIS_OK else {
            throw HTTPDNSRedisError(.connect, "cannot set the command timeout")
        }
        if let password = settings.password {
            let auth = settings.user.map { ["AUTH", $0, password] } ?? ["AUTH", password]
            // The detail never echoes the command: it holds the password.
            if case .error(let message) = try pipeline([auth])[0] { throw HTTPDNSRedisError(.auth, Self.firstWord(message)) }
        }
        if settings.database != 0, case .error(let message) = try pipeline([["SELECT", String(settings.database)]])[0] {
            throw HTTPDNSRedisError(.select, Self.firstWord(message))
        }
    }

    deinit {
        redisFree(context)
    }

    /// Sends `commands` in one write and reads their replies in order; an `.error` reply is a
    /// reply, not a throw.
    ///
    /// - Throws: ``HTTPDNSRedisError`` `.io` when the connection broke or timed out (it is then unusable).
    func pipeline(_ commands: [[String]]) throws(HTTPDNSRedisError) -> [HTTPDNSRedisReply] {
        for command in commands {
            let status = Self.withArgv(command) { argc, argv, lengths in redisAppendCommandArgv(context, argc, argv, lengths) }
            guard status == REDIS_OK else { throw HTTPDNSRedisError(.io, Self.errorText(context)) }
        }
        var replies: [HTTPDNSRedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw HTTPDNSRedisError(.io, Self.errorText(context)) }
            let reply = raw.assumingMemoryBound(to: redisReply.self)
            replies.append(Self.copy(reply))
            freeReplyObject(raw)
        }
        return replies
    }

    private static func copy(_ reply: UnsafeMutablePointer<redisReply>) -> HTTPDNSRedisReply {
        let value = reply.pointee
        func text() -> String {
            guard let str = value.str else { return "" }
            return str.withMemoryRebound(to: UInt8.self, capacity: value.len) { String(decoding: UnsafeBufferPointer(start: $0, count: value.len), as: UTF8.self) }
        }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_STATUS: return .status(text())
        case REDIS_REPLY_ERROR: return .error(text())
        case REDIS_REPLY_INTEGER: return .integer(Int(value.integer))
        case REDIS_REPLY_ARRAY:
            guard let elements = value.element else { return .array([]) }
            return .array((0..<value.elements).compactMap { elements[$0].map(copy) })
        default: return .null
        }
    }

    /// Each argument as bytes with its length (binary-safe: hiredis reads `lengths`, not NULs).
    private static func withArgv(_ command: [String], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Int32) -> Int32 {
        let copies = command.map { argument -> UnsafeMutablePointer<CChar> in
            let bytes = Array(argument.utf8)
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
            bytes.withUnsafeBufferPointer { source in
                guard let base = source.baseAddress else { return }
                base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { copy.initialize(from: $0, count: bytes.count) }
            }
            return copy
        }
        defer { copies.forEach { $0.deallocate() } }
        var argv = copies.map { UnsafePointer($0) as UnsafePointer<CChar>? }
        let lengths = command.map { $0.utf8.count }
        return argv.withUnsafeMutableBufferPointer { argvBuffer in
            lengths.withUnsafeBufferPointer { body(Int32(command.count), argvBuffer.baseAddress!, $0.baseAddress!) }
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? "error \(context.pointee.err)" : String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func firstWord(_ message: String) -> String {
        String(message.prefix { $0 != " " })
    }

    private static func timeval(_ duration: Duration) -> Glibc.timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
