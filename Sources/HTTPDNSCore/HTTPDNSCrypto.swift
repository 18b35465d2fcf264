import CCrypto

/// The cryptography the provider wire formats need, as pure functions over byte arrays.
///
/// Everything goes through libcrypto's EVP interface (OpenSSL 3); nothing here is hand-written
/// cryptography. Padding is PKCS#7 everywhere, as the DNSPod and Alibaba SDKs use it.
/// Errors are ``HTTPDNSError`` values: a bad key or IV is `.invalidConfiguration` (the credentials
/// cannot work), a ciphertext that does not decrypt is `.malformedAnswer` (the answer is garbage).
package enum HTTPDNSCrypto {
    /// The MD5 digest (16 bytes). Only for Alibaba's legacy `sign_d` signature, never for security.
    package static func md5(_ data: [UInt8]) -> [UInt8] {
        digest("MD5", data, size: 16)
    }

    /// The SHA-256 digest (32 bytes).
    package static func sha256(_ data: [UInt8]) -> [UInt8] {
        digest("SHA256", data, size: 32)
    }

    /// Keeps libcrypto up until the process is gone: by default it tears itself down in `exit`'s
    /// handlers while other threads may still be in it. `httpdns serve` exiting on SIGTERM with a
    /// NOTIFY's TSIG being checked on its listener thread failed that HMAC and crashed (a
    /// ThreadSanitizer run of `ServeSecondaryTests`). Call once, first thing, in an executable.
    package static func keepLibraryUntilExit() {
        _ = httpdns_crypto_init_without_atexit()
    }

    /// HMAC-SHA256 of `message` under `key` (RFC 2104), 32 bytes.
    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = key.withUnsafeBufferPointer { keyBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                out.withUnsafeMutableBufferPointer { outBuffer in
                    httpdns_hmac_sha256(
                        keyBuffer.baseAddress, Int32(clamping: key.count),
                        messageBuffer.baseAddress, message.count,
                        outBuffer.baseAddress, &length)
                }
            }
        }
        // HMAC-SHA256 with the built-in default provider cannot fail short of memory exhaustion.
        precondition(ok == 1 && length == 32, "HMAC-SHA256 failed in libcrypto")
        return out
    }

    /// AES-CBC encryption with PKCS#7 padding; the key length picks AES-128, -192 or -256.
    ///
    /// - Parameters:
    ///   - plaintext: Any length, at most 16 MiB.
    ///   - key: 16, 24 or 32 bytes.
    ///   - iv: 16 bytes; never reuse one under the same key (use ``randomBytes(_:)``).
    /// - Throws: `.invalidConfiguration` for a wrong key or IV length.
    package static func aesCBCEncrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(HTTPDNSError) -> [UInt8] {
        let name = try aesName(keyLength: key.count)
        guard iv.count == 16 else { throw HTTPDNSError(.invalidConfiguration, "AES-CBC needs a 16-byte IV") }
        guard let out = cipher(name, encrypt: true, key: key, iv: iv, input: plaintext, context: nil) else {
            throw HTTPDNSError(.invalidConfiguration, "AES-CBC encryption failed")
        }
        return out
    }

    /// AES-CBC decryption with PKCS#7 padding removed.
    ///
    /// - Throws: `.invalidConfiguration` for a wrong key or IV length; `.malformedAnswer` when the
    ///   ciphertext is not a whole number of blocks or its padding is wrong (wrong key, garbage).
    package static func aesCBCDecrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(HTTPDNSError) -> [UInt8] {
        let name = try aesName(keyLength: key.count)
        guard iv.count == 16 else { throw HTTPDNSError(.invalidConfiguration, "AES-CBC needs a 16-byte IV") }
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw HTTPDNSError.malformed("AES-CBC ciphertext is not a whole number of blocks")
        }
        guard let out = cipher(name, encrypt: false, key: key, iv: iv, input: ciphertext, context: nil) else {
            throw HTTPDNSError.malformed("AES-CBC ciphertext does not decrypt (bad padding or wrong key)")
        }
        return out
    }

    /// DES-ECB encryption with PKCS#7 padding (DNSPod's legacy `alg=des`). DES is broken; it is here
    /// only because enterprise DNSPod accounts still use it. Prefer AES or HTTPS.
    ///
    /// - Parameter key: exactly 8 bytes.
    /// - Throws: `.invalidConfiguration` for a wrong key length or when the OpenSSL legacy provider
    ///   cannot be loaded.
    package static func desECBEncrypt(_ plaintext: [UInt8], key: [UInt8]) throws(HTTPDNSError) -> [UInt8] {
        let context = try legacyContext()
        guard key.count == 8 else { throw HTTPDNSError(.invalidConfiguration, "DES needs an 8-byte key") }
        guard let out = cipher("DES-ECB", encrypt: true, key: key, iv: [], input: plaintext, context: context) else {
            throw HTTPDNSError(.invalidConfiguration, "DES-ECB encryption failed")
        }
        return out
    }

    /// DES-ECB decryption with PKCS#7 padding removed.
    ///
    /// - Throws: `.invalidConfiguration` for a wrong key length or a missing legacy provider;
    ///   `.malformedAnswer` when the ciphertext is not whole 8-byte blocks or its padding is wrong.
    package static func desECBDecrypt(_ ciphertext: [UInt8], key: [UInt8]) throws(HTTPDNSError) -> [UInt8] {
        let context = try legacyContext()
        guard key.count == 8 else { throw HTTPDNSError(.invalidConfiguration, "DES needs an 8-byte key") }
        guard !ciphertext.isEmpty, ciphertext.count % 8 == 0 else {
            throw HTTPDNSError.malformed("DES ciphertext is not a whole number of blocks")
        }
        guard let out = cipher("DES-ECB", encrypt: false, key: key, iv: [], input: ciphertext, context: context) else {
            throw HTTPDNSError.malformed("DES ciphertext does not decrypt (bad padding or wrong key)")
        }
        return out
    }

    /// `count` bytes from OpenSSL's CSPRNG (`RAND_bytes`), for IVs.
    ///
    /// - Throws: `.invalidConfiguration` when the generator is not seeded or `count` is out of range.
    package static func randomBytes(_ count: Int) throws(HTTPDNSError) -> [UInt8] {
        guard (0...65_536).contains(count) else {
            throw HTTPDNSError(.invalidConfiguration, "random byte count out of range")
        }
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard ok == 1 else { throw HTTPDNSError(.invalidConfiguration, "RAND_bytes failed") }
        return out
    }
}

extension HTTPDNSCrypto {
    private static func aesName(keyLength: Int) throws(HTTPDNSError) -> String {
        switch keyLength {
        case 16: return "AES-128-CBC"
        case 24: return "AES-192-CBC"
        case 32: return "AES-256-CBC"
        default: throw HTTPDNSError(.invalidConfiguration, "AES key must be 16, 24 or 32 bytes, not \(keyLength)")
        }
    }

    private static func digest(_ name: String, _ data: [UInt8], size: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let ok = data.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                httpdns_digest(name, input.baseAddress, data.count, output.baseAddress, &length)
            }
        }
        // MD5 and SHA-256 are in the default provider that ships with libcrypto 3.
        precondition(ok == 1 && Int(length) == size, "\(name) digest failed in libcrypto")
        return Array(out[0..<size])
    }

    private static func cipher(
        _ name: String, encrypt: Bool, key: [UInt8], iv: [UInt8], input: [UInt8], context: OpaquePointer?
    ) -> [UInt8]? {
        guard input.count <= 16 << 20 else { return nil }
        var out = [UInt8](repeating: 0, count: input.count + 32)
        var length: Int32 = 0
        let ok = key.withUnsafeBufferPointer { keyBuffer in
            iv.withUnsafeBufferPointer { ivBuffer in
                input.withUnsafeBufferPointer { inBuffer in
                    out.withUnsafeMutableBufferPointer { outBuffer in
                        httpdns_cipher_oneshot(
                            context, name, encrypt ? 1 : 0,
                            keyBuffer.baseAddress, Int32(key.count),
                            ivBuffer.baseAddress, Int32(iv.count),
                            inBuffer.baseAddress, Int32(input.count),
                            outBuffer.baseAddress, &length)
                    }
                }
            }
        }
        guard ok == 1, length >= 0, Int(length) <= out.count else { return nil }
        out.removeSubrange(Int(length)...)
        return out
    }

    /// The private OpenSSL library context that has the legacy provider, created once.
    ///
    /// OpenSSL 3 moved DES to the legacy provider, which the default library context does not
    /// load (on this Debian `openssl enc -des-ecb` fails without `-provider legacy`). Loading it
    /// into a private context keeps the process-wide default (used by libcurl's TLS) untouched.
    /// A Swift global is initialised exactly once, thread-safely, on first use.
    private static func legacyContext() throws(HTTPDNSError) -> OpaquePointer {
        guard let pointer = legacyLibraryContext.pointer else {
            throw HTTPDNSError(.invalidConfiguration, "DES needs the OpenSSL legacy provider, which could not be loaded")
        }
        return pointer
    }
}

/// Owns the legacy-provider library context for the life of the process.
private final class HTTPDNSLegacyLibraryContext: @unchecked Sendable {
    // Written once in init, then only read; OpenSSL library contexts are safe to share across threads.
    let pointer: OpaquePointer?
    init() { pointer = httpdns_legacy_libctx_new() }
}

private let legacyLibraryContext = HTTPDNSLegacyLibraryContext()
