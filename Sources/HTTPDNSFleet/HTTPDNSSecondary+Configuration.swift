import DNSSockets
import DNSWire
import DNSZoneTransfer
@_spi(HTTPDNSPackage) import HTTPDNSCore

extension HTTPDNSSecondary.Configuration {
    /// Reads `ZONE=PRIMARY[,PRIMARY…]`, as `httpdns serve --secondary` takes it: the zone's name and
    /// its primaries in the order to ask them, each `IP`, `IP:PORT` or `[IPv6]:PORT` (port 53 when
    /// none is given), e.g. `example.com=192.0.2.53,[2001:db8::53]:5353`.
    ///
    /// - Throws: ``HTTPDNSFleetError`` `.invalidConfiguration` naming what is wrong.
    package init(spec: String, key: DNSTSIGKey?) throws(HTTPDNSFleetError) {
        func bad(_ detail: String) -> HTTPDNSFleetError { HTTPDNSFleetError(.invalidConfiguration, "secondary '\(spec)': \(detail)") }
        guard let equals = spec.firstIndex(of: "=") else { throw bad("expected ZONE=PRIMARY[,PRIMARY…]") }
        let zoneText = spec[..<equals].trimmingCharacters(in: .whitespaces)
        let zone: DNSName
        do {
            zone = try DNSName(zoneText)
        } catch {
            throw bad("\(HTTPDNSASCII.quoted(zoneText)) is not a zone name")
        }
        guard !zone.labels.isEmpty else { throw bad("the root zone is not followed") }
        var primaries: [SocketAddress] = []
        for text in spec[spec.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false) {
            let text = text.trimmingCharacters(in: .whitespaces)
            if let (address, port) = HTTPDNSIPAddress.parseEndpoint(Substring(text)) {
                primaries.append(SocketAddress(address: address, port: port))
            } else if let address = HTTPDNSIPAddress(text) {
                primaries.append(SocketAddress(address: address, port: 53))
            } else {
                throw bad("\(HTTPDNSASCII.quoted(text)) is not IP, IP:PORT or [IPv6]:PORT")
            }
        }
        guard !primaries.isEmpty else { throw bad("no primary") }
        self.init(zone: zone, primaries: primaries, key: key)
    }

    /// The TSIG key in a BIND key file (`tsig-keygen`'s output: `key "name" { algorithm
    /// hmac-sha256; secret "…"; };`), which must hold exactly one key.
    ///
    /// - Throws: ``HTTPDNSFleetError`` `.invalidConfiguration` naming the file and the reason.
    package static func tsigKey(file path: String) throws(HTTPDNSFleetError) -> DNSTSIGKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.utf8.count <= 64 << 10 else {
            throw HTTPDNSFleetError(.invalidConfiguration, "\(path): cannot read the TSIG key file")
        }
        let keys: [DNSTSIGKey]
        do throws(DNSTSIGError) {
            keys = try DNSTSIGKey.parseBINDKeys(text)
        } catch {
            throw HTTPDNSFleetError(.invalidConfiguration, "\(path): \(error)")
        }
        guard keys.count == 1 else {
            throw HTTPDNSFleetError(.invalidConfiguration, "\(path): \(keys.count) keys; give a file with the one key of the transfers")
        }
        return keys[0]
    }
}
