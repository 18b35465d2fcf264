/// The RDATA of an SOA record (RFC 1035 §3.3.13).
public struct DNSSOA: Sendable, Hashable {
    /// Primary name server of the zone.
    public var primaryServer: DNSName
    /// Mailbox of the person responsible, as a name (`hostmaster.example.com`).
    public var responsible: DNSName
    public var serial: UInt32
    public var refresh: UInt32
    public var retry: UInt32
    public var expire: UInt32
    /// Upper bound for caching negative answers from this zone (RFC 2308 §4).
    public var minimum: UInt32

    public init(
        primaryServer: DNSName, responsible: DNSName, serial: UInt32, refresh: UInt32, retry: UInt32,
        expire: UInt32, minimum: UInt32
    ) {
        self.primaryServer = primaryServer
        self.responsible = responsible
        self.serial = serial
        self.refresh = refresh
        self.retry = retry
        self.expire = expire
        self.minimum = minimum
    }
}
