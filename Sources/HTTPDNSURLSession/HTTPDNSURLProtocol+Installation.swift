import Foundation
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPDNSURLProtocol {
    /// One installation: the client serving the sessions of one configuration.
    ///
    /// It travels inside the configuration itself, in `connectionProxyDictionary` under a private
    /// key: `URLSession` copies that dictionary with the configuration it keeps (its public
    /// `configuration`), and swift-corelibs-foundation otherwise ignores the dictionary (it has no
    /// per-session proxy). The protocol reads it back from the session of the task it serves, so
    /// each session uses its own client, cookie storage and headers (issue 8, item 5).
    final class Installation: Sendable {
        static let key = "swift-httpdns.installation"

        let client: HTTPDNSClient

        private init(client: HTTPDNSClient) {
            self.client = client
        }

        /// Every installation still referenced by a configuration, for `canInit(with:)`, which
        /// sees only the request.
        private static let live = HTTPDNSLock<[Weak]>([])

        private struct Weak {
            weak var installation: Installation?
        }

        static func attach(_ client: HTTPDNSClient, to configuration: URLSessionConfiguration) {
            let installation = Installation(client: client)
            var dictionary = configuration.connectionProxyDictionary ?? [:]
            dictionary[key] = installation
            configuration.connectionProxyDictionary = dictionary
            live.withLock { live in
                live.removeAll { $0.installation == nil }
                live.append(Weak(installation: installation))
            }
        }

        static func of(_ configuration: URLSessionConfiguration) -> Installation? {
            configuration.connectionProxyDictionary?[key] as? Installation
        }

        /// Runs for every request any session makes (twice: corelibs' choice of protocol and
        /// ``CorelibsURLCache``'s): the list is read as it stands, without a copy of the clients.
        static func anyProtects(_ host: String) -> Bool {
            live.withLock { $0 }.contains { $0.installation?.client.engine.protects(host) ?? false }
        }
    }
}
