import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore

/// What a secondary does with a NOTIFY (RFC 1996) as a value, tested without sockets: which zone to
/// check now, if any, and the bytes to answer with.
///
/// RFC 1996 §3.10 and RFC 8945: a NOTIFY is believed only from one of the zone's primaries, and,
/// when transfers are signed, only with a valid TSIG of the same key; the answer to a signed NOTIFY
/// is signed too. Anything else changes nothing: a zone not followed gets NOTAUTH, a sender not
/// among the primaries REFUSED, a bad or missing signature NOTAUTH, a malformed NOTIFY FORMERR (and
/// another opcode NOTIMP). A datagram that is not a DNS message gets no answer at all. Every answer
/// to a request signed with a key this secondary knows (any followed zone's) that verified is
/// signed with it, refusals included (RFC 8945 §5.3); only a signature that does not verify gets
/// an unsigned refusal.
package struct HTTPDNSNotifyPolicy: Sendable {
    /// The outcome for one datagram.
    package struct Outcome: Sendable {
        /// The zone to check now; nil when the NOTIFY was refused.
        package var zone: DNSName?
        /// The answer to send back; nil: none (not a DNS message).
        package var answer: [UInt8]?
        /// Why it was refused (for the log), nil when it was accepted.
        package var refusal: String?
    }

    /// The transfers followed (a zone's own and its views'), with their primaries and key.
    package var zones: [HTTPDNSSecondary.Configuration]

    package init(zones: [HTTPDNSSecondary.Configuration]) {
        self.zones = zones
    }

    /// Decides about `datagram` from `source` at `now` (seconds since 1970, for TSIG's time check).
    package func handle(_ datagram: [UInt8], from source: HTTPDNSIPAddress, now: UInt64) -> Outcome {
        guard let received = try? DNSReceivedMessage(decoding: datagram) else {
            return Outcome(zone: nil, answer: nil, refusal: "not a DNS message")
        }
        let request = received.message
        // The known key the request was signed with, when its signature verified: every answer is signed then.
        var signer: (key: DNSTSIGKey, mac: [UInt8])?
        if (try? received.tsigRecord()) != nil {
            for key in Set(zones.compactMap(\.key)) {
                if let record = try? DNSTSIG.verify(received, key: key, requestMAC: nil, now: now) {
                    signer = (key, record.mac)
                    break
                }
            }
        }
        func answer(_ response: DNSMessage) -> [UInt8]? {
            guard let signer else { return try? response.encode() }
            return try? DNSTSIG.sign(response, key: signer.key, now: now, requestMAC: signer.mac).bytes
        }
        func refuse(_ rcode: DNSResponseCode, _ why: String) -> Outcome {
            Outcome(zone: nil, answer: answer(DNSNotify.errorResponse(to: request, rcode: rcode)), refusal: why)
        }
        let notify: DNSNotify
        do {
            notify = try DNSNotify(request: request)
        } catch {
            return refuse(error.responseCode, "\(error)")
        }
        // The zone's transfers: its own and its views' (each view's key selects the primary's view).
        let transfers = zones.filter { $0.zone == notify.zone }
        guard !transfers.isEmpty else {
            return refuse(.notAuthoritative, "a NOTIFY for \(notify.zone.text()), which is not followed")
        }
        let sourceMapped = source.ipv4Mapped ?? source
        let fromPrimary = transfers.filter { transfer in
            transfer.primaries.contains(where: { ($0.address.ipv4Mapped ?? $0.address) == sourceMapped })
        }
        guard !fromPrimary.isEmpty else {
            return refuse(.refused, "a NOTIFY for \(notify.zone.text()) from \(source), not one of its primaries")
        }
        let keys = Set(fromPrimary.compactMap(\.key))
        if let signer, keys.contains(signer.key) {
            return Outcome(zone: notify.zone, answer: answer(notify.response), refusal: nil)
        }
        var failure = signer == nil ? "unsigned" : "signed with a key not this zone's"
        if signer == nil, (try? received.tsigRecord()) != nil {
            for key in keys {
                do {
                    _ = try DNSTSIG.verify(received, key: key, requestMAC: nil, now: now)
                } catch {
                    failure = "\(error)"
                }
            }
        }
        // Believed without a signature only when a transfer from that primary is unsigned too.
        if signer == nil, fromPrimary.contains(where: { $0.key == nil }) {
            return Outcome(zone: notify.zone, answer: answer(notify.response), refusal: nil)
        }
        return refuse(.notAuthoritative, "a NOTIFY for \(notify.zone.text()) from \(source): TSIG: \(failure)")
    }
}
