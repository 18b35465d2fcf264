import HTTPDNSCore
import HTTPDNSTransport

/// The HTTP transport of the stub's DoH upstreams, replaced by a new one when the network changes.
///
/// libcurl keeps a DoH upstream's connection (an HTTP/2 session) open for reuse. After the host
/// moved to another network, that connection may go through a gateway that is gone: requests on it
/// wait for their timeout before libcurl gives it up, one upstream timeout per upstream. A new
/// transport has no connection and opens fresh ones on the new path at the next query.
/// ``HTTPTransport`` cannot close its idle connections from outside (its `curl_multi` handle
/// belongs to its loop thread), so ``renew()`` makes a new one with the same configuration.
///
/// An old transport is kept until no request holds it any more (a request started before the
/// change finishes on it, or times out), then released at a later ``renew()``: releasing a transport
/// waits for its loop thread to stop, which must not happen on the cooperative pool, so the caller
/// of `renew()` (the network watcher's own thread) does it.
package final class DNSStubDoHTransport: Sendable {
    private struct State {
        var current: HTTPTransport
        /// Replaced transports that requests may still hold.
        var retired: [HTTPTransport] = []
        var renewals = 0
    }

    private let state: HTTPDNSLock<State>

    /// Starts with `transport`; ``renew()`` makes the next ones with its configuration.
    package init(_ transport: HTTPTransport = HTTPTransport()) {
        state = HTTPDNSLock(State(current: transport))
    }

    /// The transport for a request now.
    package var current: HTTPTransport {
        state.withLock { $0.current }
    }

    /// How many times ``renew()`` ran (for tests and logs).
    package var renewals: Int {
        state.withLock { $0.renewals }
    }

    /// Replaces the transport with a new one, without connections; releases retired ones that no
    /// request holds any more. Blocks while those stop (moments): call it off the cooperative pool.
    package func renew() {
        let released = state.withLock { state -> [HTTPTransport] in
            var released: [HTTPTransport] = []
            var kept: [HTTPTransport] = []
            // Taken out of the array first: the array's own reference would make none unique.
            while var transport = state.retired.popLast() {
                if isKnownUniquelyReferenced(&transport) { released.append(transport) } else { kept.append(transport) }
            }
            kept.append(state.current)
            state.retired = kept
            state.current = HTTPTransport(configuration: state.current.configuration)
            state.renewals += 1
            return released
        }
        // Released here, outside the lock: each one's deinit waits for its loop thread.
        _ = released
    }
}
