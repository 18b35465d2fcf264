/// One entry of the question section (RFC 1035 §4.1.2).
package struct DNSQuestion: Sendable, Hashable, CustomStringConvertible {
    package var name: DNSName
    package var type: DNSRecordType
    package var recordClass: DNSRecordClass

    package init(name: DNSName, type: DNSRecordType, recordClass: DNSRecordClass = .IN) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
    }

    /// `www.example.com. IN A`, as dig prints a question.
    package var description: String { "\(name) \(recordClass) \(type)" }
}
