/// One reply of Redis (RESP2), copied out of hiredis' memory by ``HTTPDNSRedisConnection``, so that
/// ``HTTPDNSReportSharing`` reads replies as plain values (and its tests make them by hand).
package enum HTTPDNSRedisReply: Sendable, Hashable {
    case string(String)
    case status(String)
    case integer(Int)
    case array([HTTPDNSRedisReply])
    case null
    /// A `-ERR …` reply: Redis refused that one command.
    case error(String)
}
