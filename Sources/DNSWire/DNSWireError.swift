/// The error the DNS codec throws for a message it cannot read or write.
///
/// Compare errors by ``code``; ``offset``, ``section``, ``index`` and ``field`` locate the problem
/// for people ("truncated at offset 41 in answer 2 rdata"). Hostile input always ends in one of these
/// errors, never in a crash or a hang.
package struct DNSWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case truncated
            case labelTooLong
            case nameTooLong
            case badLabelType
            case badPointer
            case tooManyPointers
            case badRdataLength
            case trailingData
            case invalidName
            case invalidRecord
            case messageTooLong
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The message ends before the field being read.
        package static let truncated = Code(.truncated)
        /// A label is longer than 63 octets (RFC 1035 §2.3.4).
        package static let labelTooLong = Code(.labelTooLong)
        /// A name is longer than 255 octets in wire form (RFC 1035 §2.3.4).
        package static let nameTooLong = Code(.nameTooLong)
        /// A label starts with the reserved bits `01` or `10` (RFC 1035 §4.1.4, RFC 6891 §5).
        package static let badLabelType = Code(.badLabelType)
        /// A compression pointer does not point strictly backwards (forward pointer or loop).
        package static let badPointer = Code(.badPointer)
        /// A name uses more compression pointers than it has room for labels.
        package static let tooManyPointers = Code(.tooManyPointers)
        /// RDLENGTH does not match the record's data (an A record that is not 4 bytes, a name that
        /// runs past its RDATA).
        package static let badRdataLength = Code(.badRdataLength)
        /// Bytes follow the last record the header announced.
        package static let trailingData = Code(.trailingData)
        /// Text that is not a valid DNS name (empty label, bad escape, bad host-name character).
        package static let invalidName = Code(.invalidName)
        /// A record cannot be encoded (address of the wrong size, character-string over 255 bytes).
        package static let invalidRecord = Code(.invalidRecord)
        /// The encoded message, a section or an RDATA exceeds 65,535 bytes or entries.
        package static let messageTooLong = Code(.messageTooLong)

        package var description: String { base.rawValue }
    }

    /// The part of a message being read or written.
    package enum Section: String, Sendable, Hashable {
        case header
        case question
        case answer
        case authority
        case additional
        /// Not inside a message (parsing a name from text).
        case text
    }

    /// The stable code.
    package var code: Code
    /// Byte offset into the message where the problem was found.
    package var offset: Int
    /// The section being read or written.
    package var section: Section
    /// 1-based index of the question or record inside ``section``, when there is one.
    package var index: Int?
    /// The field inside the record (`name`, `type`, `rdata`…), when known.
    package var field: String?

    package init(_ code: Code, offset: Int, section: Section, index: Int? = nil, field: String? = nil) {
        self.code = code
        self.offset = offset
        self.section = section
        self.index = index
        self.field = field
    }

    /// For example `truncated at offset 41 in answer 2 rdata`.
    package var description: String {
        var text = "\(code) at offset \(offset) in \(section.rawValue)"
        if let index { text += " \(index)" }
        if let field { text += " \(field)" }
        return text
    }
}
