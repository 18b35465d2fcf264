/// A DNS message (RFC 1035 §4.1): header, question, answer, authority and additional sections.
///
/// The header flags are kept as the raw 16-bit word in ``flags`` so that any message decodes and
/// re-encodes unchanged; the computed properties read and write its bits. Decode with
/// ``init(decoding:)``, encode with ``encode()``, build a query with
/// ``query(name:type:id:recursionDesired:edns:)``.
package struct DNSMessage: Sendable, Hashable {
    /// The ID that matches a reply to its query. RFC 8484 clients use 0; plain DNS clients must pick
    /// it at random (RFC 5452).
    package var id: UInt16
    /// The header's second 16-bit word: QR, OPCODE, AA, TC, RD, RA, Z, AD, CD, RCODE.
    package var flags: UInt16
    package var questions: [DNSQuestion]
    package var answers: [DNSRecord]
    package var authorities: [DNSRecord]
    package var additionals: [DNSRecord]

    package init(
        id: UInt16 = 0, flags: UInt16 = 0, questions: [DNSQuestion] = [], answers: [DNSRecord] = [],
        authorities: [DNSRecord] = [], additionals: [DNSRecord] = []
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// QR: true for a response.
    package var isResponse: Bool {
        get { bit(15) }
        set { setBit(15, newValue) }
    }

    /// OPCODE (4 bits); 0 is a standard query.
    package var opcode: UInt8 {
        get { UInt8((flags >> 11) & 0x0F) }
        set { flags = (flags & ~0x7800) | (UInt16(newValue & 0x0F) << 11) }
    }

    /// AA: the answer comes from an authoritative server.
    package var isAuthoritative: Bool {
        get { bit(10) }
        set { setBit(10, newValue) }
    }

    /// TC: the message was truncated to fit UDP; ask again over TCP (RFC 7766).
    package var isTruncated: Bool {
        get { bit(9) }
        set { setBit(9, newValue) }
    }

    /// RD: the client asks the server to recurse.
    package var recursionDesired: Bool {
        get { bit(8) }
        set { setBit(8, newValue) }
    }

    /// RA: the server offers recursion.
    package var recursionAvailable: Bool {
        get { bit(7) }
        set { setBit(7, newValue) }
    }

    /// AD: the server validated the data with DNSSEC (RFC 4035).
    package var authenticData: Bool {
        get { bit(5) }
        set { setBit(5, newValue) }
    }

    /// CD: the client asks the server not to validate (RFC 4035).
    package var checkingDisabled: Bool {
        get { bit(4) }
        set { setBit(4, newValue) }
    }

    /// RCODE: the low 4 bits of the response code (the OPT record may extend it).
    package var rcode: DNSResponseCode {
        get { DNSResponseCode(UInt8(flags & 0x000F)) }
        set { flags = (flags & ~0x000F) | UInt16(newValue.rawValue & 0x0F) }
    }

    /// The EDNS(0) data of the first OPT record in the additional section, if any.
    package var edns: DNSEDNS? {
        for record in additionals {
            if case .opt(let edns) = record.data { return edns }
        }
        return nil
    }

    /// A standard query with one question.
    ///
    /// - Parameters:
    ///   - name: the name to ask about.
    ///   - type: the QTYPE.
    ///   - id: 0 for DNS over HTTPS (RFC 8484 §4.1), a CSPRNG value for UDP/TCP (RFC 5452).
    ///   - recursionDesired: set RD; default true, as stub resolvers do.
    ///   - edns: add an OPT record (RFC 6891); `nil` (the default) sends none.
    package static func makeQuery(
        name: DNSName, type: DNSRecordType, id: UInt16 = 0, recursionDesired: Bool = true, edns: DNSEDNS? = nil
    ) -> DNSMessage {
        var message = DNSMessage(id: id, questions: [DNSQuestion(name: name, type: type)])
        message.recursionDesired = recursionDesired
        if let edns { message.additionals.append(.opt(edns)) }
        return message
    }

    /// The wire form of ``makeQuery(name:type:id:recursionDesired:edns:)``.
    ///
    /// `www.example.com` A with ID 0 and RD gives the 33-byte query of RFC 8484's examples.
    package static func query(
        name: DNSName, type: DNSRecordType, id: UInt16 = 0, recursionDesired: Bool = true, edns: DNSEDNS? = nil
    ) -> [UInt8] {
        let message = makeQuery(name: name, type: type, id: id, recursionDesired: recursionDesired, edns: edns)
        // A valid DNSName, one question and an OPT record with options under 64 KiB always encode.
        return (try? message.encode()) ?? []
    }

    /// A response skeleton for `query`: same ID, question, opcode and RD; QR set; RA as given.
    ///
    /// - Parameters:
    ///   - rcode: the response code (default NOERROR).
    ///   - recursionAvailable: whether the responder offers recursion (default true).
    package static func response(
        to query: DNSMessage, rcode: DNSResponseCode = .noError, recursionAvailable: Bool = true
    ) -> DNSMessage {
        var message = DNSMessage(id: query.id, questions: query.questions)
        message.isResponse = true
        message.opcode = query.opcode
        message.recursionDesired = query.recursionDesired
        message.recursionAvailable = recursionAvailable
        message.checkingDisabled = query.checkingDisabled
        message.rcode = rcode
        return message
    }

    private func bit(_ index: UInt16) -> Bool { flags & (1 << index) != 0 }

    private mutating func setBit(_ index: UInt16, _ value: Bool) {
        if value { flags |= 1 << index } else { flags &= ~(1 << index) }
    }
}
