import DNSWire
import HTTPDNSCore

extension DNSStubRequest {
    /// What to do with a received message.
    package enum Reading: Sendable, Hashable {
        /// A query to resolve.
        case query(DNSStubRequest)
        /// Answer at once with the rejection's RCODE.
        case reject(DNSStubRejection)
        /// Send nothing back.
        case drop(DNSStubRequestError)
    }

    /// Reads one received message (a datagram, or a TCP message without its length prefix).
    ///
    /// In order: fewer than 12 bytes or QR set → dropped; OPCODE not QUERY → NOTIMP (checked on the
    /// header alone, so a NOTIFY or UPDATE of any shape gets it); not decodable → FORMERR; several
    /// OPT records, one outside the additional section or options cut short → FORMERR (RFC 6891
    /// §6.1.1-6.1.2); EDNS version
    /// not 0 → BADVERS (§6.1.3); QDCOUNT not 1 → FORMERR; malformed Client Subnet → FORMERR (RFC 7871
    /// §6); AXFR or IXFR → REFUSED (EDE 21, the stub does not transfer zones). Every other query,
    /// any type and class, is for resolving.
    package static func read(_ bytes: [UInt8], transport: DNSStubTransport) -> Reading {
        guard bytes.count >= 12 else { return .drop(DNSStubRequestError(.tooShort, "\(bytes.count) bytes")) }
        let header = DNSMessage(id: UInt16(bytes[0]) << 8 | UInt16(bytes[1]), flags: UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
        guard !header.isResponse else { return .drop(DNSStubRequestError(.isResponse)) }
        var rejection = DNSStubRejection(
            DNSStubRequestError(.malformed), id: header.id, opcode: header.opcode, recursionDesired: header.recursionDesired,
            checkingDisabled: header.checkingDisabled, transport: transport
        )
        func reject(_ code: DNSStubRequestError.Code, _ detail: String = "") -> Reading {
            rejection.error = DNSStubRequestError(code, detail)
            return .reject(rejection)
        }
        guard header.opcode == 0 else { return reject(.notQuery, "opcode \(header.opcode)") }
        let message: DNSMessage
        do {
            message = try DNSMessage(decoding: bytes)
        } catch {
            return reject(.malformed, "\(error)")
        }
        let options = message.edns
        rejection.edns = options.map { EDNS(udpPayloadSize: $0.udpPayloadSize, dnssecOK: $0.dnssecOK) }
        if message.questions.count == 1 { rejection.question = message.questions[0] }
        let optCount = message.additionals.count { $0.type == .OPT }
        if optCount > 1 || (message.answers + message.authorities).contains(where: { $0.type == .OPT }) {
            return reject(.badOPT, "\(optCount) OPT records in the additional section")
        }
        if let options, options.version != 0 { return reject(.badVersion, "EDNS version \(options.version)") }
        guard message.questions.count == 1, let question = message.questions.first else {
            return reject(.badQuestionCount, "\(message.questions.count) questions")
        }
        var edns = rejection.edns
        if let options {
            switch HTTPDNSClientSubnet.findOption(in: options.options) {
            case .absent:
                break
            case .malformed:
                return reject(.badOPT, "EDNS options cut short")
            case .found(let data):
                guard let subnet = DNSStubClientSubnet(optionData: data) else { return reject(.badClientSubnet) }
                edns?.clientSubnet = subnet
            }
        }
        if question.type == .AXFR || question.type == .IXFR {
            return reject(.unsupportedType, "zone transfers are not forwarded")
        }
        return .query(DNSStubRequest(
            id: message.id, question: question, recursionDesired: message.recursionDesired,
            checkingDisabled: message.checkingDisabled, authenticData: message.authenticData, edns: edns,
            transport: transport
        ))
    }
}
