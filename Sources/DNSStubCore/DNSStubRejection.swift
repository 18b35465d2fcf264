import DNSWire

/// A message the stub answers at once without resolving (FORMERR, NOTIMP, BADVERS, REFUSED): what
/// of it the answer echoes.
package struct DNSStubRejection: Sendable, Hashable {
    package var error: DNSStubRequestError
    package var id: UInt16
    /// OPCODE, echoed (a NOTIMP answer keeps the opcode the client used).
    package var opcode: UInt8
    package var recursionDesired: Bool
    package var checkingDisabled: Bool
    /// The question to echo; nil when the message does not decode or QDCOUNT is not 1.
    package var question: DNSQuestion?
    /// The client's EDNS when its message decoded with an OPT record: the answer then carries one
    /// (RFC 6891 §7), with any Extended DNS Error.
    package var edns: DNSStubRequest.EDNS?
    package var transport: DNSStubTransport

    package init(
        _ error: DNSStubRequestError, id: UInt16, opcode: UInt8 = 0, recursionDesired: Bool = false,
        checkingDisabled: Bool = false, question: DNSQuestion? = nil, edns: DNSStubRequest.EDNS? = nil,
        transport: DNSStubTransport = .udp
    ) {
        self.error = error
        self.id = id
        self.opcode = opcode
        self.recursionDesired = recursionDesired
        self.checkingDisabled = checkingDisabled
        self.question = question
        self.edns = edns
        self.transport = transport
    }

    /// The rejection of a well-formed `request` (REFUSED for a client not allowed).
    package init(_ error: DNSStubRequestError, request: DNSStubRequest) {
        self.init(
            error, id: request.id, recursionDesired: request.recursionDesired, checkingDisabled: request.checkingDisabled,
            question: request.question, edns: request.edns, transport: request.transport
        )
    }
}
