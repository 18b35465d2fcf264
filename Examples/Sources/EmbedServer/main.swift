// Examples/Sources/EmbedServer/main.swift — the HTTPDNS server inside your own process.
// Usage: EmbedServer ZONE.json NAME
//   Serves ZONE on 127.0.0.1 (a port the system picks), asks itself for NAME the way the DNSPod
//   SDK does (GET /d?dn=NAME), prints the answer, and stops.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNSServer

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    print("usage: EmbedServer ZONE.json NAME")
    exit(64)
}
var configuration = HTTPDNSService.Configuration()
configuration.zone = try HTTPDNSZone(contentsOfFile: arguments[1])
let service = HTTPDNSService(configuration: configuration)
try service.start()
defer { service.stop() }
let port = service.port!
print("listening on 127.0.0.1:\(port)")

let url = URL(string: "http://127.0.0.1:\(port)/d?dn=\(arguments[2])")!
let (data, _) = try await URLSession.shared.data(from: url)
print("\(arguments[2]) -> \(String(decoding: data, as: UTF8.self))")
