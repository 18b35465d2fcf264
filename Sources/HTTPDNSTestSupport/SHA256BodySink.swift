import CCrypto
import Foundation
import HTTPServing

/// A request-body sink for ``HTTPServer`` that hashes the body with SHA-256 as it arrives and counts
/// its bytes, so a server can prove a 64 MiB upload arrived byte-exact without holding it.
///
/// The server calls ``append(_:)`` on its loop thread, one call at a time; the lock makes the
/// result safe to read from the handler or the test.
package final class SHA256BodySink: HTTPServer.BodySink, @unchecked Sendable {
    private let lock = NSLock()
    private var context: OpaquePointer?
    private var count = 0
    private var digest: [UInt8]?

    public init() {
        context = EVP_MD_CTX_new()
        if let context, EVP_DigestInit_ex(context, EVP_sha256(), nil) != 1 {
            EVP_MD_CTX_free(context)
            self.context = nil
        }
    }

    deinit {
        if let context { EVP_MD_CTX_free(context) }
    }

    public func append(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock {
            count += bytes.count
            guard let context, let base = bytes.baseAddress, digest == nil else { return }
            _ = EVP_DigestUpdate(context, base, bytes.count)
        }
    }

    /// Bytes received so far.
    public var byteCount: Int { lock.withLock { count } }

    /// The SHA-256 of everything appended, lower-case hex; ends the hashing (later bytes are only
    /// counted). Empty when libcrypto could not hash.
    public func finish() -> String {
        lock.withLock {
            if digest == nil, let context {
                var output = [UInt8](repeating: 0, count: 32)
                var length: UInt32 = 0
                digest = EVP_DigestFinal_ex(context, &output, &length) == 1 ? Array(output.prefix(Int(length))) : []
            }
            return (digest ?? []).map { String(format: "%02x", $0) }.joined()
        }
    }

    /// SHA-256 of a file, read in 1 MiB pieces: the client side of a large-upload check.
    public static func hashFile(atPath path: String) throws -> (hex: String, count: Int) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        defer { try? handle.close() }
        let sink = SHA256BodySink()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            chunk.withUnsafeBytes { sink.append($0) }
        }
        return (sink.finish(), sink.byteCount)
    }
}
