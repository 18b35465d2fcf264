import HTTPDNSCore
import XCTest

final class HTTPDNSCryptoTests: XCTestCase {
    func testMD5KnownAnswers() {
        // RFC 1321 appendix A.5.
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.md5([])), "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.md5(bytes("abc"))), "900150983cd24fb0d6963f7d28e17f72")
        // Alibaba sign_d golden vector (provider-apis.md).
        XCTAssertEqual(
            HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.md5(bytes("www.aliyun.com-IAmASecret-1534316400"))),
            "60c71e98b6d7fcbb366243e224eab457")
    }

    func testSHA256AndHMACKnownAnswers() {
        XCTAssertEqual(
            HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(bytes("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231 test case 2.
        XCTAssertEqual(
            HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: bytes("Jefe"), message: bytes("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // RFC 4231 test case 6: a key longer than the block size is hashed first.
        let longKey = [UInt8](repeating: 0xaa, count: 131)
        XCTAssertEqual(
            HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: longKey, message: bytes("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        // Empty key is allowed by RFC 2104.
        XCTAssertEqual(HTTPDNSCrypto.hmacSHA256(key: [], message: bytes("x")).count, 32)
    }

    func testAESCBCNISTVector() throws {
        // NIST SP 800-38A F.2.1 (CBC-AES128.Encrypt); PKCS#7 adds one block of padding after it.
        let key = unhex("2b7e151628aed2a6abf7158809cf4f3c")
        let iv = unhex("000102030405060708090a0b0c0d0e0f")
        let plain = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
        let cipher = try HTTPDNSCrypto.aesCBCEncrypt(plain, key: key, iv: iv)
        XCTAssertEqual(cipher.count, 48)
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(Array(cipher[0..<32])), "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2")
        XCTAssertEqual(try HTTPDNSCrypto.aesCBCDecrypt(cipher, key: key, iv: iv), plain)
    }

    func testAESCBCOpenSSLVector() throws {
        // echo -n "www.dnspod.cn" | openssl enc -aes-128-cbc -K 30313233343536373839616263646566 \
        //   -iv 000102030405060708090a0b0c0d0e0f | xxd -p
        let key = bytes("0123456789abcdef")
        let iv = unhex("000102030405060708090a0b0c0d0e0f")
        let cipher = try HTTPDNSCrypto.aesCBCEncrypt(bytes("www.dnspod.cn"), key: key, iv: iv)
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(cipher), "556fad2b1e6696ecb7b748a48d600025")
    }

    func testAESKeySizesAndRoundTrips() throws {
        var generator = SeededGenerator(seed: 7)
        for keyLength in [16, 24, 32] {
            let key = (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let iv = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for length in 0...40 {
                let plain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let cipher = try HTTPDNSCrypto.aesCBCEncrypt(plain, key: key, iv: iv)
                XCTAssertEqual(cipher.count, (length / 16 + 1) * 16)
                XCTAssertEqual(try HTTPDNSCrypto.aesCBCDecrypt(cipher, key: key, iv: iv), plain)
            }
        }
        // AES-256 differs from AES-128 on the same prefix: the key length really selects the cipher.
        let iv = [UInt8](repeating: 0, count: 16)
        let c128 = try HTTPDNSCrypto.aesCBCEncrypt(bytes("x"), key: [UInt8](repeating: 1, count: 16), iv: iv)
        let c256 = try HTTPDNSCrypto.aesCBCEncrypt(bytes("x"), key: [UInt8](repeating: 1, count: 32), iv: iv)
        XCTAssertNotEqual(c128, c256)
    }

    func testAESErrors() {
        let iv = [UInt8](repeating: 0, count: 16)
        assertThrowsCode(.invalidConfiguration) { try HTTPDNSCrypto.aesCBCEncrypt([1], key: [UInt8](repeating: 0, count: 15), iv: iv) }
        assertThrowsCode(.invalidConfiguration) { try HTTPDNSCrypto.aesCBCEncrypt([1], key: [UInt8](repeating: 0, count: 16), iv: [1, 2]) }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSCrypto.aesCBCDecrypt([1, 2, 3], key: [UInt8](repeating: 0, count: 16), iv: iv) }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSCrypto.aesCBCDecrypt([], key: [UInt8](repeating: 0, count: 16), iv: iv) }
        // A whole block that does not decrypt to valid padding under this key.
        let key = bytes("0123456789abcdef")
        assertThrowsCode(.malformedAnswer) {
            try HTTPDNSCrypto.aesCBCDecrypt(unhex("556fad2b1e6696ecb7b748a48d600025"), key: bytes("fedcba9876543210"), iv: iv)
        }
        XCTAssertEqual(try? HTTPDNSCrypto.aesCBCDecrypt(unhex("556fad2b1e6696ecb7b748a48d600025"), key: key, iv: unhex("000102030405060708090a0b0c0d0e0f")), bytes("www.dnspod.cn"))
    }

    func testDESECBOpenSSLVectors() throws {
        // DES-ECB is only in OpenSSL 3's legacy provider, so the commands need -provider:
        // echo -n "www.dnspod.cn" | openssl enc -des-ecb -K 3132333435363738 -provider legacy -provider default | xxd -p
        //   → 016f412edc2957272cf14dc3b282f4b3
        // echo -n "" | openssl enc -des-ecb -K 3132333435363738 -provider legacy -provider default | xxd -p
        //   → feb959b7d4642fcb
        let key = bytes("12345678")
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(try HTTPDNSCrypto.desECBEncrypt(bytes("www.dnspod.cn"), key: key)), "016f412edc2957272cf14dc3b282f4b3")
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(try HTTPDNSCrypto.desECBEncrypt([], key: key)), "feb959b7d4642fcb")
        XCTAssertEqual(try HTTPDNSCrypto.desECBDecrypt(unhex("016f412edc2957272cf14dc3b282f4b3"), key: key), bytes("www.dnspod.cn"))
    }

    func testDESRoundTripsAndErrors() throws {
        var generator = SeededGenerator(seed: 11)
        let key = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for length in 0...30 {
            let plain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let cipher = try HTTPDNSCrypto.desECBEncrypt(plain, key: key)
            XCTAssertEqual(cipher.count, (length / 8 + 1) * 8)
            XCTAssertEqual(try HTTPDNSCrypto.desECBDecrypt(cipher, key: key), plain)
        }
        assertThrowsCode(.invalidConfiguration) { try HTTPDNSCrypto.desECBEncrypt([1], key: [1, 2, 3]) }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSCrypto.desECBDecrypt([1, 2, 3], key: key) }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSCrypto.desECBDecrypt(unhex("016f412edc2957272cf14dc3b282f4b3"), key: bytes("87654321")) }
    }

    func testDESFromManyThreadsAtOnce() {
        // The legacy provider is loaded once; concurrent first use must be safe.
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let key = bytes("12345678")
            let cipher = try? HTTPDNSCrypto.desECBEncrypt(bytes("name-\(index)"), key: key)
            XCTAssertEqual(cipher.flatMap { try? HTTPDNSCrypto.desECBDecrypt($0, key: key) }, bytes("name-\(index)"))
        }
    }

    func testRandomBytes() throws {
        let a = try HTTPDNSCrypto.randomBytes(16)
        let b = try HTTPDNSCrypto.randomBytes(16)
        XCTAssertEqual(a.count, 16)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(try HTTPDNSCrypto.randomBytes(0), [])
        assertThrowsCode(.invalidConfiguration) { try HTTPDNSCrypto.randomBytes(-1) }
        assertThrowsCode(.invalidConfiguration) { try HTTPDNSCrypto.randomBytes(1 << 30) }
    }

    func testHexStrict() throws {
        XCTAssertEqual(HTTPDNSCrypto.hexEncode([0x00, 0xab, 0xff, 0x10]), "00abff10")
        XCTAssertEqual(try HTTPDNSCrypto.hexDecode("00ABff10"), [0x00, 0xab, 0xff, 0x10])
        XCTAssertEqual(try HTTPDNSCrypto.hexDecode(""), [])
        for junk in ["0", "abc", "0g", "0x00", " 00", "00 ", "zz", "é0", "00\n"] {
            assertThrowsCode(.malformedAnswer, junk) { try HTTPDNSCrypto.hexDecode(junk) }
        }
        var generator = SeededGenerator(seed: 3)
        let data = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        XCTAssertEqual(try HTTPDNSCrypto.hexDecode(HTTPDNSCrypto.hexEncode(data)), data)
    }
}
