import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP Basic challenges (401), answered inside the protocol.
///
/// Left to swift-corelibs-foundation, a 401 from a custom protocol goes through its own challenge
/// code, which re-sends the request with its OWN HTTP protocol, outside this one: under a lying
/// resolver the credentials would go wherever the resolver points. And with no delegate, or a
/// delegate that declines, corelibs never completes the task (observed with Swift 6.3). So the
/// protocol holds a 401 back, asks the task's delegate (or the configuration's credential storage)
/// as `URLSession` would, re-sends through HTTPDNS with the credential, and delivers the final 401
/// without its `WWW-Authenticate` field, which keeps corelibs from starting its own round.
extension ProtocolForwarder {
    /// The most challenges answered for one task before the 401 is delivered as it is.
    static let challengeLimit = 3

    struct ChallengeState {
        var held: (response: HTTPURLResponse, space: URLProtectionSpace)?
        var body = Data()
        var failures = 0
        var lastCredential: URLCredential?
        var space: URLProtectionSpace?

        mutating func keep(_ data: Data) {
            body.append(data.prefix(max(0, (1 << 20) - body.count)))
        }
    }

    /// Holds `response` back when it is a Basic challenge still worth answering.
    func holdForChallenge(_ response: HTTPURLResponse) -> Bool {
        guard response.statusCode == 401, let space = Self.protectionSpace(response) else { return false }
        challenge.held = (response, space)
        challenge.body = Data()
        return true
    }

    /// The protection space of a `WWW-Authenticate: Basic realm="…"` answer; nil for other schemes.
    static func protectionSpace(_ response: HTTPURLResponse) -> URLProtectionSpace? {
        guard let field = response.value(forHTTPHeaderField: "WWW-Authenticate"),
              let url = response.url, let host = url.host, let scheme = url.scheme.map({ HTTPDNSASCII.lowercased($0.utf8) })
        else { return nil }
        let trimmed = field.trimmingCharacters(in: .whitespaces)
        guard HTTPDNSASCII.hasPrefixIgnoringCase(trimmed.utf8, "basic") else { return nil }
        var realm: String?
        if let range = trimmed.range(of: "realm=", options: .caseInsensitive) {
            let rest = trimmed[range.upperBound...]
            if rest.hasPrefix("\"") {
                realm = rest.dropFirst().split(separator: "\"", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            } else {
                realm = rest.split(separator: ",").first.map { String($0).trimmingCharacters(in: .whitespaces) }
            }
        }
        return URLProtectionSpace(
            host: host, port: url.port ?? (scheme == "https" ? 443 : 80), protocol: scheme, realm: realm,
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
    }

    /// The held 401 completed: ask who can answer it (on the work queue).
    func answerChallenge() {
        guard let (response, space) = challenge.held else { return }
        let proposed = proposedCredential(for: space)
        guard challenge.failures < Self.challengeLimit, let delegate = task.delegate else {
            challengeAnswered(.performDefaultHandling, nil, proposed: proposed)
            return
        }
        let question = URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: proposed, previousFailureCount: challenge.failures,
            failureResponse: response, error: nil, sender: ChallengeSender())
        let (session, task, queue) = (session, task, queue)
        session.delegateQueue.addOperation {
            let once = HTTPDNSLock(false)
            delegate.urlSession(session, task: task, didReceive: question) { disposition, credential in
                guard once.withLock({ claimed in defer { claimed = true }; return !claimed }) else { return }
                queue.async { self.challengeAnswered(disposition, credential, proposed: proposed) }
            }
        }
    }

    private func challengeAnswered(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?, proposed: URLCredential?) {
        let retryWith: URLCredential?
        switch disposition {
        case .useCredential:
            retryWith = credential
        case .performDefaultHandling:
            retryWith = proposed == challenge.lastCredential ? nil : proposed
        case .cancelAuthenticationChallenge, .rejectProtectionSpace:
            finish(error: URLError(.cancelled, userInfo: [NSLocalizedDescriptionKey: "The authentication challenge was cancelled."]))
            return
        @unknown default:
            retryWith = nil
        }
        guard let retryWith, challenge.failures < Self.challengeLimit, let launched, let user = retryWith.user else {
            deliverHeldChallenge()
            return
        }
        challenge.failures += 1
        challenge.lastCredential = retryWith
        challenge.space = challenge.held?.space
        challenge.held = nil
        var request = launched.request
        let token = Data("\(user):\(retryWith.password ?? "")".utf8).base64EncodedString()
        request.setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
        let (retry, options) = (request, launched.options)
        let body = options.body ?? RequestBody(retry, newStream: options.newBodyStream)
        Task {
            do {
                let again = try await body.following(to: retry)
                self.queue.async {
                    var options = options
                    options.body = again
                    self.launch(retry, client: launched.client, options: options)
                }
            } catch {
                self.queue.async { self.finish(error: error) }
            }
        }
    }

    /// Delivers the held 401, without `WWW-Authenticate` (see the type's comment), and its body.
    private func deliverHeldChallenge() {
        guard let (response, _) = challenge.held else { return }
        challenge.held = nil
        var fields: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String, !HTTPDNSASCII.equalsIgnoringCase(name, "www-authenticate") else { continue }
            fields[name] = value
        }
        let stripped = HTTPURLResponse(url: response.url!, statusCode: 401, httpVersion: "HTTP/1.1", headerFields: fields) ?? response
        let body = challenge.body
        challenge.body = Data()
        didReceive(response: stripped, connection: HTTPDNSConnectionReport(
            host: response.url?.host ?? "", answer: nil, attempts: [], connectedAddress: nil, certificateVerified: false,
            viaBlockRedirect: false, httpVersion: ""))
        if !body.isEmpty { didReceive(data: body) }
        didComplete(error: nil)
    }

    /// The credential `URLSession` would propose: the storage's default for the space, else its
    /// first by user name.
    private func proposedCredential(for space: URLProtectionSpace) -> URLCredential? {
        guard let storage = session.configuration.urlCredentialStorage else { return nil }
        if let credential = storage.defaultCredential(for: space) { return credential }
        return storage.credentials(for: space)?.sorted { $0.key < $1.key }.first?.value
    }

    /// After a success with a credential, stores it as `URLSession` does (unless `.none`).
    func rememberCredential() {
        guard let credential = challenge.lastCredential, let space = challenge.space, credential.persistence != .none else { return }
        session.configuration.urlCredentialStorage?.set(credential, for: space)
    }
}

/// The challenge's sender: answers come through the delegate's completion handler instead.
private final class ChallengeSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
