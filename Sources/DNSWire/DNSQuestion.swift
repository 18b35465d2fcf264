/// One entry of the question section (RFC 1035 §4.1.2).
public struct DNSQuestion: Sendable, Hashable, CustomStringConvertible {
    public var name: DNSName
    public var type: DNSRecordType
    public var recordClass: DNSRecordClass

    public init(name: DNSName, type: DNSRecordType, recordClass: DNSRecordClass = .IN) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
    }

    /// `www.example.com. IN A`, as dig prints a question.
    public var description: String { "\(name) \(recordClass) \(type)" }
}
