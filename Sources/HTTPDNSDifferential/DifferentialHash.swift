import CCrypto
import Foundation

/// SHA-256 as lower-case hex, for bodies and files.
public enum DifferentialHash {
    public static func sha256(_ data: Data) -> String {
        guard let context = EVP_MD_CTX_new() else { return "" }
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        data.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        var output = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &size)
        return output.map { String(format: "%02x", $0) }.joined()
    }

    /// The hash of a file read in 1 MiB pieces, and its length.
    public static func file(_ url: URL) -> (sha256: String, length: Int)? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        var length = 0
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            length += chunk.count
            chunk.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        }
        var output = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &size)
        return (output.map { String(format: "%02x", $0) }.joined(), length)
    }
}
