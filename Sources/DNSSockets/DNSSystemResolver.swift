#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import DNSWire
import HTTPDNSCore

/// The operating system's resolver (`getaddrinfo`): `/etc/hosts`, then whatever DNS the machine
/// is configured with. It is the fallback when every HTTPDNS provider fails, and the baseline that
/// hijack detection compares against.
///
/// `getaddrinfo` blocks and cannot be interrupted, so it runs on a bounded pool of threads
/// (``threadLimit``, lookups beyond it queue); the caller gets `.timedOut` or `.cancelled` on time
/// while a started lookup finishes in the background, and a queued one is dropped.
package struct DNSSystemResolver: Sendable {
    /// Most `getaddrinfo` calls running at once, in the whole process; more wait their turn.
    ///
    /// A lookup answered from /etc/hosts or nscd takes microseconds, so 16 threads clear bursts of
    /// thousands within a timeout; one that goes to DNS waits on the network, and 16 threads are
    /// 16 outstanding queries, glibc's own retries included, which is plenty for a fallback path.
    package static let threadLimit = 16

    /// A blocking lookup: host name and family in, addresses in resolver order out.
    ///
    /// Throw `HTTPDNSError` (`.nameNotFound`, `.noAddress`, `.transport`); other errors are
    /// reported as `.transport`.
    package typealias Lookup = @Sendable (_ host: String, _ family: HTTPDNSAddressFamily) throws -> [HTTPDNSIPAddress]

    /// Time allowed for one lookup. Default 5 s, glibc's default per-query timeout.
    package var timeout: Duration
    private let lookup: Lookup

    /// - Parameters:
    ///   - timeout: time allowed for one lookup (default 5 s).
    ///   - lookup: the blocking call; default ``getaddrinfoLookup``. Tests inject fakes so that no
    ///     query leaves the machine.
    package init(timeout: Duration = .seconds(5), lookup: @escaping Lookup = DNSSystemResolver.getaddrinfoLookup) {
        self.timeout = timeout
        self.lookup = lookup
    }

    /// Resolves `host` to addresses of `family`, in resolver order without duplicates.
    ///
    /// An IP literal is returned as is (when its family is wanted) without a lookup; a name that
    /// is not a valid host name is rejected before the resolver sees it.
    ///
    /// - Throws: `HTTPDNSError` `.invalidHost`, `.nameNotFound`, `.noAddress`, `.timedOut`,
    ///   `.cancelled`, `.transport`.
    package func resolve(_ host: String, family: HTTPDNSAddressFamily = .both) async throws -> [HTTPDNSIPAddress] {
        if let literal = HTTPDNSIPAddress(host) {
            guard family.includes(literal.family) else {
                throw HTTPDNSError(.noAddress, "literal of the other family", host: host, source: "system")
            }
            return [literal]
        }
        do {
            _ = try DNSName(hostName: host)
        } catch {
            throw HTTPDNSError(.invalidHost, "not a host name (\(error))", host: host, source: "system")
        }
        let lookup = self.lookup
        do {
            return try await BlockingCall<[HTTPDNSIPAddress]>.run(
                on: .lookups, limit: .call(timeout), timeoutDetail: "getaddrinfo took too long"
            ) { _ in
                do {
                    var seen = Set<HTTPDNSIPAddress>()
                    let addresses = try lookup(host, family).filter { family.includes($0.family) && seen.insert($0).inserted }
                    if addresses.isEmpty { return .failure(HTTPDNSError(.noAddress, "no address of the wanted family")) }
                    return .success(addresses)
                } catch let error as HTTPDNSError {
                    return .failure(error)
                } catch {
                    return .failure(HTTPDNSError(.transport, "\(error)"))
                }
            }
        } catch var error as HTTPDNSError {
            error.host = error.host ?? host
            error.source = error.source ?? "system"
            throw error
        }
    }

    /// The real lookup: `getaddrinfo` with `AF_INET`, `AF_INET6` or `AF_UNSPEC`.
    ///
    /// `AI_ADDRCONFIG` is not used, so `localhost` resolves on hosts with only loopback interfaces.
    package static let getaddrinfoLookup: Lookup = { host, family in
        var hints = addrinfo()
        switch family {
        case .ipv4: hints.ai_family = AF_INET
        case .ipv6: hints.ai_family = AF_INET6
        case .both, .auto: hints.ai_family = AF_UNSPEC
        }
        hints.ai_socktype = PosixSocket.stream
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else { throw error(status: status) }
        var addresses: [HTTPDNSIPAddress] = []
        var node = list
        while let current = node {
            if let address = current.pointee.ai_addr, let parsed = SocketAddress(storage: UnsafeRawPointer(address)) {
                addresses.append(parsed.address)
            }
            node = current.pointee.ai_next
        }
        return addresses
    }

    /// glibc's `EAI_NODATA` (the name exists without addresses), hidden behind `_GNU_SOURCE`.
    private static let eaiNoData: Int32 = -5

    private static func error(status: Int32) -> HTTPDNSError {
        let text = String(cString: gai_strerror(status))
        switch status {
        case EAI_NONAME: return HTTPDNSError(.nameNotFound, text)
        case eaiNoData: return HTTPDNSError(.noAddress, text)
        case EAI_SYSTEM: return PosixSocket.error("getaddrinfo")
        default: return HTTPDNSError(.transport, text)
        }
    }
}
