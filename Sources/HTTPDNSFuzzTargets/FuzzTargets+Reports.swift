import HTTPDNSCore
import HTTPDNSServer

/// `POST /report`: the body every app may send and the `Authorization` header beside it.
extension HTTPDNSFuzzTarget {
    static let reportBody = HTTPDNSFuzzTarget(
        "report-body",
        "a report body reads within its bounds and back the same when written again; a signature over it holds for it alone; any header reads without a crash"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // The bytes as an Authorization header value: never a crash, and a signed one reads back.
        let header = String(decoding: bytes.prefix(2_048), as: UTF8.self)
        if case .signed(let account, let expires, let signature)? = HTTPDNSReportCredential(header: header) {
            try require(signature.count == 32, "a signature of \(signature.count) bytes")
            let again = "\(HTTPDNSReportCredential.hmacScheme) account=\(account), expires=\(expires), signature=\(HTTPDNSCrypto.hexEncode(signature))"
            try require(HTTPDNSReportCredential(header: again) == .signed(account: account, expires: expires, signature: signature), "a signed header does not read back")
        }

        let batch: HTTPDNSReportBatch
        do throws(HTTPDNSReportBatch.ParseError) {
            batch = try HTTPDNSReportBatch.parse(bytes)
        } catch {
            try require(error.code != .tooLarge || bytes.count > HTTPDNSReportBatch.maxBodyBytes, "a body within bounds called too large")
            try require(error.detail.utf8.count <= 200, "a reason of \(error.detail.utf8.count) bytes")
            return
        }
        try require(bytes.count <= HTTPDNSReportBatch.maxBodyBytes, "a body of \(bytes.count) bytes read")
        try require((1...HTTPDNSReportBatch.maxItems).contains(batch.items.count), "\(batch.items.count) items read")
        for item in batch.items {
            try require(HTTPDNSHostPolicy.normalize(item.host) == item.host && HTTPDNSHostPolicy.isValidHostName(item.host), "host \(item.host)")
            try require((1...65_535).contains(item.port) && item.time >= 0, "port \(item.port) or time \(item.time)")
            try require(item.address.ipv4Mapped == nil, "a mapped address kept as IPv6")
        }
        // Written out and read again: the same items.
        guard let again = try? HTTPDNSReportBatch.parse(Array(batch.json.utf8)) else {
            throw HTTPDNSFuzzFailure(detail: "the batch written out does not read back")
        }
        try require(again == batch, "the batch reads back differently")
        // Signed, it is accepted; with one byte changed, it is not.
        let authenticator = HTTPDNSReportAuthenticator(tokens: [], secrets: ["1": ["fuzz-secret"]])
        let signed = HTTPDNSReportCredential.signedHeader(account: "1", expires: 100, body: bytes, secret: "fuzz-secret")
        try require(authenticator.verify(authorization: signed, body: bytes, now: 50) == .accepted(principal: "account:1"), "a valid signature refused")
        var tampered = bytes
        tampered[bytes.count / 2] ^= 0x01
        try require(authenticator.verify(authorization: signed, body: tampered, now: 50) == .forbidden("wrong signature"), "a tampered body accepted")
    }
}
