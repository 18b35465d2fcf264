import HTTPDNSCore
import HTTPDNSOperations

extension HTTPDNSServerMetrics {
    /// Origin health, kept apart from the per-request counters (it changes at probe pace, not per query).
    struct HealthState {
        /// Every checked address and check, with whether it is up.
        var origins: [HTTPDNSHealthTarget: Bool] = [:]
        /// Probes by kind (0 scheduled, 1 on demand) and result (0 passed, 1 failed).
        var probes: [UInt64] = [0, 0, 0, 0]
        var failOpen: UInt64 = 0
    }

    /// One probe ended.
    package func healthProbed(passed: Bool, onDemand: Bool) {
        health.withLock { $0.probes[(onDemand ? 2 : 0) + (passed ? 0 : 1)] &+= 1 }
    }

    /// The states of every checked address and check now (replacing the previous set).
    package func healthStates(_ origins: [HTTPDNSHealthTarget: Bool]) {
        health.withLock { $0.origins = origins }
    }

    /// One checked address and check changed state (an entry not in the set is not added: it was
    /// dropped by a reload since).
    package func healthState(_ target: HTTPDNSHealthTarget, up: Bool) {
        health.withLock { health in
            if health.origins[target] != nil { health.origins[target] = up }
        }
    }

    /// An answer listed every address of a family although all were down (fail open).
    package func healthFailedOpen() {
        health.withLock { $0.failOpen &+= 1 }
    }

    /// Answers that failed open so far.
    package var healthFailOpenCount: UInt64 { health.withLock { $0.failOpen } }

    /// The health families, appended to ``render()``'s text.
    func renderHealth(into text: inout HTTPDNSPrometheusText) {
        let health = self.health.withLock { $0 }
        text.family("origin_up", "gauge", "Whether a checked zone address is answered (1) or down (0), by address and check.")
        let origins = health.origins.map { (address: $0.key.address, check: $0.key.check.label, up: $0.value) }.sorted {
            HTTPDNSHealthTarget.precedes(($0.address, $0.check), ($1.address, $1.check))
        }
        for origin in origins {
            let labels = "address=\"\(Self.labelValue(origin.address.description))\",check=\"\(Self.labelValue(origin.check))\""
            text.sample("origin_up", labels, origin.up ? 1 : 0)
        }
        text.family("health_probes_total", "counter", "Health probes run, by kind and result.")
        for (slot, count) in health.probes.enumerated() {
            let kind = slot < 2 ? "scheduled" : "on-demand"
            let result = slot % 2 == 0 ? "passed" : "failed"
            text.sample("health_probes_total", "kind=\"\(kind)\",result=\"\(result)\"", count)
        }
        text.family("health_fail_open_total", "counter", "Answers that listed all addresses of a family because all were down.")
        text.sample("health_fail_open_total", "", health.failOpen)
    }

    /// A label value escaped as the text format requires (``HTTPDNSPrometheusText/labelValue(_:)``).
    static func labelValue(_ value: String) -> String {
        HTTPDNSPrometheusText.labelValue(value)
    }
}
