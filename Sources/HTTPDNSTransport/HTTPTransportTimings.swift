import CCurl
import HTTPDNSCore

/// libcurl's phase times for one transfer (`CURLINFO_*_TIME_T`), each measured from the start of
/// the transfer, as libcurl reports them: a later phase includes the earlier ones.
package struct HTTPTransportTimings: Sendable, Hashable {
    /// Name resolution done (`CURLINFO_NAMELOOKUP_TIME_T`); near zero for pinned requests, whose
    /// addresses are given to libcurl.
    package var nameLookup: Duration = .zero
    /// TCP connection made (`CURLINFO_CONNECT_TIME_T`), to the proxy when one is used.
    package var connect: Duration = .zero
    /// TLS handshake done (`CURLINFO_APPCONNECT_TIME_T`); zero for plain HTTP.
    package var tlsHandshake: Duration = .zero
    /// First response byte (`CURLINFO_STARTTRANSFER_TIME_T`); zero until it arrives.
    package var firstByte: Duration = .zero
    /// The whole transfer (`CURLINFO_TOTAL_TIME_T`); up to now while it runs.
    package var total: Duration = .zero
    /// Whether the transfer opened a new connection (`CURLINFO_NUM_CONNECTS` > 0) rather than
    /// reusing one, in which case the connect and TLS times are libcurl's bookkeeping, not the network's.
    package var newConnection = false

    package init() {}

    /// The times of `easy` so far.
    init(easy: UnsafeMutableRawPointer) {
        func time(_ info: CURLINFO) -> Duration {
            var value: curl_off_t = 0
            _ = httpdns_easy_getinfo_off_t(easy, info, &value)
            return .microseconds(max(0, value))
        }
        nameLookup = time(CURLINFO_NAMELOOKUP_TIME_T)
        connect = time(CURLINFO_CONNECT_TIME_T)
        tlsHandshake = time(CURLINFO_APPCONNECT_TIME_T)
        firstByte = time(CURLINFO_STARTTRANSFER_TIME_T)
        total = time(CURLINFO_TOTAL_TIME_T)
        var connects = 0
        _ = httpdns_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        newConnection = connects > 0
    }

    /// The TCP connect phase alone (after name resolution); zero on a reused connection.
    package var tcpConnect: Duration {
        newConnection ? max(.zero, connect - nameLookup) : .zero
    }

    /// The TLS handshake phase alone; zero for plain HTTP and on a reused connection.
    package var tls: Duration {
        newConnection && tlsHandshake > .zero ? max(.zero, tlsHandshake - connect) : .zero
    }
}

/// What a transfer knows when its connection is ready, before the request is sent.
package struct HTTPTransportConnection: Sendable {
    /// The peer (`CURLINFO_PRIMARY_IP`): the pinned address connected to, or the proxy.
    package var address: HTTPDNSIPAddress?
    /// The times so far.
    package var timings: HTTPTransportTimings
}
