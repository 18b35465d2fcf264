import DNSWire

/// A NOTIFY request (RFC 1996) as a secondary receives it: the primary says `zone` changed.
///
/// A NOTIFY is only a hint: the secondary answers it, then checks the primary's SOA itself
/// (RFC 1996 §3.11), so ``serial`` never replaces that query. TSIG checks (RFC 8945) and whether
/// the zone is served and the sender allowed (NOTAUTH, REFUSED) are the caller's.
package struct DNSNotify: Sendable, Hashable {
    /// Why a message is not a NOTIFY this package accepts, with the RCODE to answer it with.
    package struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// A stable code.
        package struct Code: Hashable, Sendable, CustomStringConvertible {
            private enum Base: String, Hashable, Sendable {
                case notNotify
                case isResponse
                case badQuestionCount
                case badQuestionType
            }

            private let base: Base
            private init(_ base: Base) { self.base = base }

            /// OPCODE is not NOTIFY (4).
            package static let notNotify = Code(.notNotify)
            /// QR is set: a response, not a request.
            package static let isResponse = Code(.isResponse)
            /// QDCOUNT is not 1 (RFC 1996 §3.7).
            package static let badQuestionCount = Code(.badQuestionCount)
            /// QTYPE is not SOA or QCLASS not IN (RFC 1996 §3.7: only SOA is defined).
            package static let badQuestionType = Code(.badQuestionType)

            package var description: String { base.rawValue }
        }

        package var code: Code
        package var detail: String

        package init(_ code: Code, _ detail: String = "") {
            self.code = code
            self.detail = detail
        }

        /// The RCODE to answer with: NOTIMP for another opcode, FORMERR for a malformed NOTIFY.
        package var responseCode: DNSResponseCode {
            code == .notNotify ? .notImplemented : .formatError
        }

        package var description: String { detail.isEmpty ? "notify \(code)" : "notify \(code): \(detail)" }
    }

    /// The zone that changed (the question's name).
    package var zone: DNSName
    /// The serial of the SOA in the answer section, when the primary sent one (RFC 1996 §3.7).
    package var serial: DNSSerial?
    /// The request's ID, echoed in the response.
    package var id: UInt16
    /// The request's question, echoed in the response.
    package var question: DNSQuestion

    /// Reads a NOTIFY request.
    ///
    /// - Throws: ``Failure`` for another opcode, a response, QDCOUNT other than 1, or a question
    ///   that is not `zone IN SOA`.
    package init(request: DNSMessage) throws(Failure) {
        guard request.opcode == DNSMessage.notifyOpcode else { throw Failure(.notNotify, "opcode \(request.opcode)") }
        guard !request.isResponse else { throw Failure(.isResponse) }
        guard request.questions.count == 1, let question = request.questions.first else {
            throw Failure(.badQuestionCount, "\(request.questions.count) questions")
        }
        guard question.type == .SOA, question.recordClass == .IN else {
            throw Failure(.badQuestionType, "\(question)")
        }
        self.zone = question.name
        self.question = question
        self.id = request.id
        self.serial = nil
        for record in request.answers where record.name == question.name {
            if case .soa(let soa) = record.data {
                serial = soa.serialNumber
                break
            }
        }
    }

    /// The acknowledgement (RFC 1996 §4.7): same ID and question, QR and AA set, NOERROR.
    package var response: DNSMessage {
        var message = DNSMessage(id: id, questions: [question])
        message.opcode = DNSMessage.notifyOpcode
        message.isResponse = true
        message.isAuthoritative = true
        return message
    }

    /// An error response to `request`: same ID, opcode and question (if any), QR set, `rcode`.
    ///
    /// - Parameter rcode: ``Failure/responseCode``, or NOTAUTH / REFUSED for a zone not served or a
    ///   sender not allowed.
    package static func errorResponse(to request: DNSMessage, rcode: DNSResponseCode) -> DNSMessage {
        DNSMessage.response(to: request, rcode: rcode, recursionAvailable: false)
    }

    /// A NOTIFY request for `zone`, as a primary sends it (RFC 1996 §3.6); for tests and tools.
    ///
    /// - Parameter soa: put in the answer section as the serial hint, when given.
    package static func request(zone: DNSName, id: UInt16, soa: DNSSOA? = nil, ttl: UInt32 = 0) -> DNSMessage {
        var message = DNSMessage(id: id, questions: [DNSQuestion(name: zone, type: .SOA)])
        message.opcode = DNSMessage.notifyOpcode
        message.isAuthoritative = true
        if let soa { message.answers = [DNSRecord(name: zone, ttl: ttl, data: .soa(soa))] }
        return message
    }
}
