import HTTPDNSOperations

extension HTTPDNSServerMetrics {
    /// The `queries` section of `/status`: requests answered, in all and by view, answer format and
    /// endpoint, as `/metrics` counts them.
    package func queriesStatus() -> HTTPDNSStatusValue {
        let state = self.state.withLock { $0 }
        return .object([
            ("total", .integer(state.latencyCount)),
            ("byView", .array(state.viewNames.enumerated().map { slot, name in
                .object([("view", .string(name)), ("queries", .integer(state.viewCounts[slot]))])
            })),
            ("byFormat", .array(Format.allCases.map { format in
                .object([("format", .string(format.label)), ("queries", .integer(state.formats[format.rawValue]))])
            })),
            ("byEndpoint", .array(Endpoint.allCases.map { endpoint in
                .object([("endpoint", .string(endpoint.label)), ("queries", .integer(state.endpoints[endpoint.rawValue]))])
            })),
        ])
    }

    /// The `shed` section: connections now and in all, and what each limit refused.
    package func shedStatus() -> HTTPDNSStatusValue {
        let state = self.state.withLock { $0 }
        return .object([
            ("openConnections", .integer(state.openConnections)),
            ("connections", .integer(state.connections)),
            ("accessLogDropped", .integer(state.accessLogDropped)),
            ("byReason", .array(ShedReason.allCases.map { reason in
                .object([("reason", .string(reason.label)), ("refused", .integer(state.shed[reason.rawValue]))])
            })),
        ])
    }

    /// The `zones` section: the zone in service and its loads, then every followed zone (a secondary,
    /// or a view's own transfer) with its serial in service and its attempts by result.
    package func zonesStatus() -> HTTPDNSStatusValue {
        let state = self.state.withLock { $0 }
        let transfers = self.transfers.withLock { $0 }
        let followed = Set(transfers.results.keys).union(transfers.serials.keys).sorted()
        return .object([
            ("names", .integer(state.zoneNames)),
            ("loads", .integer(state.zoneLoads)),
            ("loadFailures", .integer(state.zoneLoadFailures)),
            ("transfers", .array(followed.map { key in
                var members: [(String, HTTPDNSStatusValue)] = [
                    ("zone", .string(key.zone)), ("view", key.view.map(HTTPDNSStatusValue.string) ?? .null),
                    ("serial", transfers.serials[key].map { .integer($0) } ?? .null),
                ]
                let results = transfers.results[key] ?? [UInt64](repeating: 0, count: TransferResult.allCases.count)
                members += TransferResult.allCases.map { ($0.label, .integer(results[$0.rawValue])) }
                let reasons = (transfers.reasons[key] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                members.append(("failureReasons", .array(reasons.map(HTTPDNSStatusValue.string))))
                return .object(members)
            })),
        ])
    }
}
