/// The RDATA of an SOA record (RFC 1035 §3.3.13).
package struct DNSSOA: Sendable, Hashable {
    /// Primary name server of the zone.
    package var primaryServer: DNSName
    /// Mailbox of the person responsible, as a name (`hostmaster.example.com`).
    package var responsible: DNSName
    package var serial: UInt32
    package var refresh: UInt32
    package var retry: UInt32
    package var expire: UInt32
    /// Upper bound for caching negative answers from this zone (RFC 2308 §4).
    package var minimum: UInt32

    package init(
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
