import DNSWire
import DNSZoneTransfer
import HTTPDNSCore

/// TSIG golden vectors computed by an independent implementation: the Python script below, which
/// builds the messages and the RFC 8945 §4.3 MAC inputs by hand with nothing but Python's standard
/// library (`struct`, `hmac`, `hashlib`), not with the Swift code under test. Run it with
/// `python3` to regenerate the values (no network, no third-party package).
///
/// Key `xfr-key.example.`, hmac-sha256, secret = SHA-256("swift-httpdns tsig test key"), fudge 300.
/// `query`: AXFR example.com ID 0x1234 signed at 1,700,000,000. `m1`…`m3`: an AXFR response in three
/// messages: `m1` signed at T+1 (request MAC, message, all variables); `m2` unsigned; `m3` signed at
/// T+2 with prior MAC, `m2`, `m3` and the timers only (RFC 8945 §5.3.1).
///
/// ```python
/// # Independent RFC 8945 HMAC-SHA256 TSIG vectors: messages and MAC inputs built by hand with the
/// # standard library only (struct, hmac, hashlib, base64), not with the Swift code under test.
/// import base64, hashlib, hmac, struct
///
/// def name(text):  # uncompressed wire form, lower case
///     out = b""
///     for label in text.rstrip(".").split("."):
///         out += bytes([len(label)]) + label.lower().encode()
///     return out + b"\0"
///
/// SECRET = hashlib.sha256(b"swift-httpdns tsig test key").digest()
/// KEY, ALG, FUDGE = "xfr-key.example.", "hmac-sha256.", 300
///
/// def header(id, flags, qd, an, ns, ar):
///     return struct.pack("!6H", id, flags, qd, an, ns, ar)
///
/// def tsig_vars(time, error=0, other=b""):
///     return (name(KEY) + struct.pack("!HI", 255, 0) + name(ALG) + struct.pack("!HIH", time >> 32, time & 0xffffffff, FUDGE)
///             + struct.pack("!HH", error, len(other)) + other)
///
/// def timers(time):
///     return struct.pack("!HIH", time >> 32, time & 0xffffffff, FUDGE)
///
/// def tsig_rr(mac, time, orig_id, error=0, other=b""):
///     rdata = name(ALG) + struct.pack("!HIHH", time >> 32, time & 0xffffffff, FUDGE, len(mac)) + mac + struct.pack("!HHH", orig_id, error, len(other)) + other
///     return name(KEY) + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata
///
/// def sign(msg, time, prior=None, timers_only=False):
///     data = (struct.pack("!H", len(prior)) + prior if prior is not None else b"") + msg + (timers(time) if timers_only else tsig_vars(time))
///     mac = hmac.new(SECRET, data, hashlib.sha256).digest()
///     orig_id = struct.unpack("!H", msg[:2])[0]
///     # ARCOUNT + 1, TSIG appended
///     ar = struct.unpack("!H", msg[10:12])[0]
///     return msg[:10] + struct.pack("!H", ar + 1) + msg[12:] + tsig_rr(mac, time, orig_id), mac
///
/// T = 1_700_000_000
/// zone = name("example.com.")
/// # AXFR query, ID 0x1234, RD clear.
/// query = header(0x1234, 0x0000, 1, 0, 0, 0) + zone + struct.pack("!HH", 252, 1)
/// signed_query, query_mac = sign(query, T)
/// print("secret", base64.b64encode(SECRET).decode())
/// print("query", signed_query.hex())
/// print("querymac", query_mac.hex())
/// # Responses: QR AA, question echoed in the first, compression pointers to the question name (offset 12).
/// soa_rdata = b"\x03ns1\xc0\x0c" + b"\x0ahostmaster\xc0\x0c" + struct.pack("!5I", 2024010101, 3600, 600, 86400, 300)
/// soa = b"\xc0\x0c" + struct.pack("!HHIH", 6, 1, 3600, len(soa_rdata)) + soa_rdata
/// def a(label, ip):
///     rdata = bytes(ip)
///     return bytes([len(label)]) + label.encode() + b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + rdata
/// m1 = header(0x1234, 0x8400, 1, 2, 0, 0) + zone + struct.pack("!HH", 252, 1) + soa + a("www", [192, 0, 2, 1])
/// # later messages carry no question; their names are spelled out (no earlier name to point at).
/// soa_full = name("example.com.") + struct.pack("!HHIH", 6, 1, 3600, 0)
/// def full_soa():
///     rdata = name("ns1.example.com.") + name("hostmaster.example.com.") + struct.pack("!5I", 2024010101, 3600, 600, 86400, 300)
///     return name("example.com.") + struct.pack("!HHIH", 6, 1, 3600, len(rdata)) + rdata
/// def full_a(owner, ip):
///     return name(owner) + struct.pack("!HHIH", 1, 1, 300, 4) + bytes(ip)
/// m2 = header(0x1234, 0x8400, 0, 1, 0, 0) + full_a("mail.example.com.", [192, 0, 2, 2])
/// m3 = header(0x1234, 0x8400, 0, 2, 0, 0) + full_a("ftp.example.com.", [192, 0, 2, 3]) + full_soa()
/// s1, mac1 = sign(m1, T + 1, prior=query_mac)
/// # The third message's MAC covers the prior MAC, the unsigned second message and its own bytes.
/// mac3 = hmac.new(SECRET, struct.pack("!H", len(mac1)) + mac1 + m2 + m3 + timers(T + 2), hashlib.sha256).digest()
/// s3 = m3[:10] + struct.pack("!H", 1) + m3[12:] + tsig_rr(mac3, T + 2, 0x1234)
/// print("m1", s1.hex())
/// print("m2", m2.hex())
/// print("m3", s3.hex())
/// ```
enum TSIGVectors {
    static let secretBase64 = "nrlFzrWOJ5SxpTUBZnRDCFA1MfaLoabL+rNBXYHm9Nk="
    static let keyName = "xfr-key.example."
    static let time: UInt64 = 1_700_000_000
    static let query = HTTPDNSCrypto.hexBytes("123400000001000000000001076578616d706c6503636f6d0000fc0001077866722d6b6579076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006553f100012c00206db0a3f16580b74bef63367e9a864bdfd6233629d93c142cbdf47e1da69d63e4123400000000")
    static let queryMAC = HTTPDNSCrypto.hexBytes("6db0a3f16580b74bef63367e9a864bdfd6233629d93c142cbdf47e1da69d63e4")
    static let m1 = HTTPDNSCrypto.hexBytes("123484000001000200000001076578616d706c6503636f6d0000fc0001c00c0006000100000e100027036e7331c00c0a686f73746d6173746572c00c78a3f17500000e1000000258000151800000012c03777777c00c000100010000012c0004c0000201077866722d6b6579076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006553f101012c002099c6b1a9a28c5892691149811c1010abd472367d39bc6350c9ea0abba7e0cd6b123400000000")
    static let m2 = HTTPDNSCrypto.hexBytes("123484000000000100000000046d61696c076578616d706c6503636f6d00000100010000012c0004c0000202")
    static let m3 = HTTPDNSCrypto.hexBytes("12348400000000020000000103667470076578616d706c6503636f6d00000100010000012c0004c0000203076578616d706c6503636f6d000006000100000e10003d036e7331076578616d706c6503636f6d000a686f73746d6173746572076578616d706c6503636f6d0078a3f17500000e1000000258000151800000012c077866722d6b6579076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006553f102012c002046fdd41468c3ae1142b023e2319177264138e93492b28b24db0eb394f7ac5789123400000000")

    static func key() throws -> DNSTSIGKey {
        try DNSTSIGKey(commandLine: "hmac-sha256:\(keyName):\(secretBase64)")
    }
}

extension HTTPDNSCrypto {
    /// Test vectors are valid hex; a typo fails the test that uses the vector.
    static func hexBytes(_ text: String) -> [UInt8] { (try? hexDecode(text)) ?? [] }
}
