import DNSWire

extension DNSZoneTransfer {
    /// The header and question rules every response message must follow (RFC 5936 §2.2).
    ///
    /// A NOTAUTH whose TSIG carries an error of the primary's (BADSIG, BADKEY, BADTIME: RFC 8945
    /// §5.2) is `.tsig`, not `.serverError`: the primary refused our signature, a key that differs
    /// from its own (BIND and Knot answer a wrong secret so), and that is what the log must say.
    func checkHeader(_ message: DNSMessage, signature: Signature) throws(DNSZoneTransferError) {
        let index = messageCount
        guard message.id == query.id else {
            throw DNSZoneTransferError(.idMismatch, message: index, "ID \(message.id), query \(query.id)")
        }
        guard message.isResponse else { throw DNSZoneTransferError(.notResponse, message: index) }
        guard message.opcode == DNSMessage.queryOpcode else {
            throw DNSZoneTransferError(.badOpcode, message: index, "opcode \(message.opcode)")
        }
        guard message.rcode == .noError else {
            if message.rcode == .notAuthoritative, case .rejected(let error) = signature, error.code == .peerError {
                throw DNSZoneTransferError(.tsig, message: index, "the primary refused our signature: \(error)", tsigError: error)
            }
            throw DNSZoneTransferError(.serverError, message: index, "\(message.rcode)", responseCode: message.rcode)
        }
        guard !message.isTruncated else { throw DNSZoneTransferError(.truncatedResponse, message: index) }
        // RFC 5936 §2.2.1: the first message echoes the question; later ones may leave it out.
        let echoed = message.questions == query.questions
        guard echoed || (index > 1 && message.questions.isEmpty) else {
            throw DNSZoneTransferError(.questionMismatch, message: index, "\(message.questions)")
        }
    }

    /// Adds the message to the totals and checks them against ``Limits``.
    mutating func count(_ message: DNSMessage, wireSize: Int) throws(DNSZoneTransferError) {
        recordCount += message.answers.count
        byteCount += wireSize
        guard recordCount <= limits.maxRecords, byteCount <= limits.maxBytes else {
            throw DNSZoneTransferError(
                .tooLarge, message: messageCount,
                "\(recordCount) records, \(byteCount) bytes; limits \(limits.maxRecords), \(limits.maxBytes)"
            )
        }
    }

    /// Class IN and in bailiwick, for every record of the answer section.
    func checkRecord(_ record: DNSRecord) throws(DNSZoneTransferError) {
        guard record.recordClass == .IN else {
            throw DNSZoneTransferError(.wrongClass, message: messageCount, "\(record)")
        }
        guard record.name.isSubdomain(of: zone) else {
            throw DNSZoneTransferError(.outOfZone, message: messageCount, "\(record.name)")
        }
    }

    /// Feeds one checked record to the state machine; returns the result at the closing SOA.
    mutating func take(_ record: DNSRecord) throws(DNSZoneTransferError) -> Result? {
        let soa: DNSSOA?
        if case .soa(let value) = record.data { soa = value } else { soa = nil }
        switch state {
        case .start:
            guard let soa, record.name == zone else {
                throw DNSZoneTransferError(.missingSOA, message: messageCount, "first record \(record)")
            }
            let opening = Opening(record: record, soa: soa)
            guard let current else {
                state = .full(opening: opening)
                return nil
            }
            switch current.serial.compare(soa.serialNumber) {
            case .less:
                state = .ixfrForm(opening: opening)
                return nil
            case .equal:
                return .upToDate(soa)
            case .greater, .undefined:
                throw DNSZoneTransferError(.serialWentBackwards, message: messageCount, "primary \(soa.serial), ours \(current.soa.serial)")
            }
        case .ixfrForm(let opening):
            guard let soa else {
                state = .full(opening: opening)
                return try take(record)
            }
            if record == opening.record { return closeFull(opening) }
            // RFC 1995 §4: the first sequence must start at the serial we hold.
            guard let current, soa.serial == current.soa.serial else {
                throw DNSZoneTransferError(.serialChainBroken, message: messageCount, "first sequence starts at \(soa.serial)")
            }
            records = DNSZoneRecordSet(current.records)
            state = .deleting(opening: opening, from: soa.serialNumber)
            return nil
        case .full(let opening):
            guard soa != nil else {
                records.insert(record)
                return nil
            }
            guard record.name == opening.record.name, soa == opening.soa else {
                throw DNSZoneTransferError(.unexpectedSOA, message: messageCount, "\(record) does not close \(opening.record)")
            }
            return closeFull(opening)
        case .deleting(let opening, let from):
            guard let soa else {
                guard records.remove(record) else {
                    throw DNSZoneTransferError(.absentDeletion, message: messageCount, "\(record)")
                }
                return nil
            }
            guard soa.serialNumber.compare(from) == .greater else {
                throw DNSZoneTransferError(.serialWentBackwards, message: messageCount, "sequence from \(from) to \(soa.serial)")
            }
            guard soa.serialNumber.compare(opening.soa.serialNumber) != .greater else {
                throw DNSZoneTransferError(.serialChainBroken, message: messageCount, "sequence ends at \(soa.serial), past \(opening.soa.serial)")
            }
            state = .adding(opening: opening, to: soa.serialNumber)
            return nil
        case .adding(let opening, let to):
            guard let soa else {
                records.insert(record)
                return nil
            }
            if to == opening.soa.serialNumber {
                // The sequences reached the new serial: this SOA must be the closing copy.
                guard record.name == opening.record.name, soa == opening.soa else {
                    throw DNSZoneTransferError(.serialChainBroken, message: messageCount, "\(record) after the last sequence")
                }
                return .incremental(snapshot(opening))
            }
            guard soa.serialNumber == to else {
                throw DNSZoneTransferError(.serialChainBroken, message: messageCount, "sequence starts at \(soa.serial), previous ended at \(to)")
            }
            state = .deleting(opening: opening, from: to)
            return nil
        case .finished:
            return nil
        }
    }

    private func closeFull(_ opening: Opening) -> Result {
        .full(snapshot(opening))
    }

    private func snapshot(_ opening: Opening) -> DNSZoneSnapshot {
        DNSZoneSnapshot(zone: zone, soa: opening.soa, soaTTL: opening.record.ttl, records: records.records)
    }
}
