import DNSWire

extension DNSStubResponse {
    /// The answer to `request` on the wire, never larger than the client may receive.
    ///
    /// The header has the client's ID, QR, RD and CD copied, RA set, AA clear, and AD only when the
    /// upstream set it and the client set DO or AD (RFC 6840 §5.8). The question is the request's,
    /// byte for byte (name case included). An OPT record is added iff the client sent one (RFC 6891
    /// §7): the stub's UDP payload size, DO echoed (RFC 3225 §3), the extended RCODE, and the
    /// Extended DNS Error if any. Without DO, RRSIG, NSEC and NSEC3 records are left out unless asked
    /// for by type (RFC 4035 §3.2.1).
    ///
    /// An answer over ``DNSStubRequest/responseSizeLimit(maxUDPPayloadSize:)`` is sent as header,
    /// question and OPT with TC set: no partial RRsets (RFC 2181 §9), the client asks again over TCP
    /// (RFC 7766). Records that cannot be encoded give SERVFAIL (EDE 0).
    ///
    /// - Parameter maxUDPPayloadSize: the stub's UDP cap and advertised size, default 1232 (DNS Flag
    ///   Day 2020), kept within 512…4096.
    package func encode(for request: DNSStubRequest, maxUDPPayloadSize: Int = 1232) -> [UInt8] {
        let shape = DNSStubShape(
            id: request.id, opcode: 0, recursionDesired: request.recursionDesired,
            checkingDisabled: request.checkingDisabled, passesAD: request.dnssecOK || request.authenticData,
            question: request.question, edns: request.edns, transport: request.transport
        )
        return shape.encode(self, maxUDPPayloadSize: maxUDPPayloadSize)
    }
}

extension DNSStubRejection {
    /// The immediate answer: the rejection's RCODE (``DNSStubRequestError/responseCode``), the ID,
    /// OPCODE, RD and CD as received, the question when there was exactly one that decoded, and an
    /// OPT record (with the Extended DNS Error, if any) when the client's message had one.
    ///
    /// - Parameter maxUDPPayloadSize: as for ``DNSStubResponse/encode(for:maxUDPPayloadSize:)``.
    package func encode(maxUDPPayloadSize: Int = 1232) -> [UInt8] {
        let shape = DNSStubShape(
            id: id, opcode: opcode, recursionDesired: recursionDesired, checkingDisabled: checkingDisabled,
            passesAD: false, question: question, edns: edns, transport: transport
        )
        let response = DNSStubResponse(rcode: error.responseCode ?? .formatError, extendedError: error.extendedError)
        return shape.encode(response, maxUDPPayloadSize: maxUDPPayloadSize)
    }
}

/// What an answer takes from the message it answers.
private struct DNSStubShape {
    var id: UInt16
    var opcode: UInt8
    var recursionDesired: Bool
    var checkingDisabled: Bool
    var passesAD: Bool
    var question: DNSQuestion?
    var edns: DNSStubRequest.EDNS?
    var transport: DNSStubTransport

    /// Types a client without DO gets only when it asks for them (RFC 4035 §3.2.1).
    private static let dnssecTypes: Set<DNSRecordType> = [DNSRecordType(46), DNSRecordType(47), DNSRecordType(50)]

    func encode(_ response: DNSStubResponse, maxUDPPayloadSize: Int) -> [UInt8] {
        var response = response
        // An extended RCODE travels in OPT only; a client without EDNS cannot be told it.
        if response.rcode.rawValue > 0x0F, edns == nil { response = .serverFailure(.other, "\(response.rcode)") }
        var message = DNSMessage(id: id)
        message.isResponse = true
        message.opcode = opcode
        message.recursionDesired = recursionDesired
        message.recursionAvailable = true
        message.checkingDisabled = checkingDisabled
        message.authenticData = response.authenticData && passesAD
        message.rcode = DNSResponseCode(response.rcode.rawValue & 0x0F)
        message.questions = question.map { [$0] } ?? []
        let advertised = DNSStubRequest.clampedUDPPayloadSize(maxUDPPayloadSize)
        var opt = edns.map {
            DNSEDNS(
                udpPayloadSize: UInt16(advertised), extendedRCode: response.rcode.rawValue >> 4, dnssecOK: $0.dnssecOK,
                options: response.extendedError?.option ?? []
            )
        }
        let limit = DNSStubRequest.responseSizeLimit(transport: transport, edns: edns, maxUDPPayloadSize: maxUDPPayloadSize)
        if !response.isTruncated {
            let keeps = keepFilter
            message.answers = response.answers.filter(keeps)
            message.authorities = response.authorities.filter(keeps)
            message.additionals = response.additionals.filter(keeps) + (opt.map { [.opt($0)] } ?? [])
            do {
                let bytes = try message.encode()
                if bytes.count <= limit { return bytes }
            } catch let error as DNSWireError where error.code != .messageTooLong {
                return encode(.serverFailure(.other, "answer cannot be encoded"), maxUDPPayloadSize: maxUDPPayloadSize)
            } catch {}
        }
        // Too large (or incomplete upstream): header, question and OPT only, TC set.
        message.isTruncated = true
        message.answers = []
        message.authorities = []
        message.additionals = opt.map { [.opt($0)] } ?? []
        if let bytes = try? message.encode(), bytes.count <= limit { return bytes }
        // Only a long Extended DNS Error can still be too much: header + 259-byte question + bare
        // OPT is under 512 bytes.
        opt?.options = []
        message.additionals = opt.map { [.opt($0)] } ?? []
        return (try? message.encode()) ?? []
    }

    private var keepFilter: (DNSRecord) -> Bool {
        if edns?.dnssecOK == true { return { _ in true } }
        let asked = question?.type
        return { record in !Self.dnssecTypes.contains(record.type) || record.type == asked }
    }
}
