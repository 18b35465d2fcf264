import DNSWire

/// The stub's DNS front as values: what to do with each received message, and the bytes of each
/// answer. The I/O shell owns the sockets, the clock, the cache's lock and the upstreams; it calls
/// ``receive(_:transport:clientAllowed:)`` per message and ``encode(_:for:)`` per answer.
package struct DNSStubFront: Sendable {
    /// Settings, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// The UDP payload size the stub advertises in its OPT records and the most it sends a UDP
        /// client, whatever the client advertises. Default 1232 (DNS Flag Day 2020: no IP
        /// fragmentation on common paths); kept within 512…4096 (RFC 6891 §6.2.5).
        package var maxUDPPayloadSize: Int = 1232

        package init() {}
    }

    /// What to do with a received message.
    package enum Action: Sendable, Hashable {
        /// Resolve the query (cache, engine or upstream), then send ``encode(_:for:)``'s bytes.
        case resolve(DNSStubRequest)
        /// Send these bytes back now; `reason` is for logs and counters.
        case reply([UInt8], reason: DNSStubRequestError)
        /// Send nothing.
        case drop(DNSStubRequestError)
    }

    package var configuration: Configuration

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The action for one received message (a datagram, or a TCP message without its length prefix).
    ///
    /// See ``DNSStubRequest/read(_:transport:)`` for the checks. A client not allowed
    /// (`clientAllowed` false, the caller's `--allow-from` decision) gets REFUSED with EDE 18
    /// Prohibited for a well-formed query and nothing at all otherwise: a stranger learns no more
    /// than that the stub is there.
    package func receive(_ bytes: [UInt8], transport: DNSStubTransport, clientAllowed: Bool) -> Action {
        switch DNSStubRequest.read(bytes, transport: transport) {
        case .drop(let error):
            return .drop(error)
        case .reject(let rejection):
            guard clientAllowed else { return .drop(DNSStubRequestError(.notAllowed, rejection.error.description)) }
            return .reply(rejection.encode(maxUDPPayloadSize: configuration.maxUDPPayloadSize), reason: rejection.error)
        case .query(let request):
            guard clientAllowed else {
                let rejection = DNSStubRejection(DNSStubRequestError(.notAllowed, "client not in --allow-from"), request: request)
                return .reply(rejection.encode(maxUDPPayloadSize: configuration.maxUDPPayloadSize), reason: rejection.error)
            }
            return .resolve(request)
        }
    }

    /// The bytes answering `request` with `response` (see
    /// ``DNSStubResponse/encode(for:maxUDPPayloadSize:)``), within the client's size limit.
    package func encode(_ response: DNSStubResponse, for request: DNSStubRequest) -> [UInt8] {
        response.encode(for: request, maxUDPPayloadSize: configuration.maxUDPPayloadSize)
    }
}
