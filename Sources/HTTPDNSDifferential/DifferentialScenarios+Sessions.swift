import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DifferentialScenarios {
    /// Cookies across two sessions, a 401 challenge, `URLCache` hits.
    static let sessions: [DifferentialScenario] = [
        // Over HTTP/1.1: corelibs' own HTTP stack stores no cookie from HTTP/2 answers (see "cookies-http2").
        DifferentialScenario("cookies-two-sessions") { context in
            try await cookies(context, plain: true)
        },
        DifferentialScenario("cookies-http2") { context in
            try await cookies(context, plain: false)
        },
        // Only a delegate that answers: corelibs never completes a 401 task otherwise (`ProtectingURLSession.md`).
        DifferentialScenario("challenge-401") { context in
            var result = DifferentialResult()
            var options = RecordingDelegate.Options()
            options.credential = URLCredential(user: "user", password: "password", persistence: .forSession)
            let delegate = RecordingDelegate(options)
            context.session(delegate: delegate).dataTask(with: context.url("/auth")).resume()
            await delegate.finish(&result, label: "answered")
            return result
        },
        DifferentialScenario("urlcache-hit") { context in
            var result = DifferentialResult()
            let key = UUID().uuidString
            let session = context.session { configuration in
                configuration.urlCache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0, diskPath: nil)
                configuration.requestCachePolicy = .useProtocolCachePolicy
            }
            for round in 0..<2 {
                let (data, response, error) = await session.dataTaskResult(URLRequest(url: context.url("/cacheable?k=\(key)")))
                result.record("round-\(round)", data: data, response: response, error: error)
                try await Task.sleep(for: .milliseconds(100))  // the cache is written after the completion
            }
            return result
        },
    ]

    /// Session A logs in (gets a cookie), then B and A ask: only A sends it, only A's jar holds it.
    static func cookies(_ context: DifferentialContext, plain: Bool) async throws -> DifferentialResult {
        var result = DifferentialResult()
        let a = context.session()
        let b = context.session()
        let (loginData, loginResponse) = try await a.data(from: context.url("/cookie?v=alpha", plain: plain))
        result.record("a-login", data: loginData, response: loginResponse, error: nil)
        let (bData, bResponse) = try await b.data(from: context.url("/echo", plain: plain))
        result.record("b-echo", data: bData, response: bResponse, error: nil)
        let (aData, aResponse) = try await a.data(from: context.url("/echo", plain: plain))
        result.record("a-echo", data: aData, response: aResponse, error: nil)
        result.facts["a.jar"] = jar(a)
        result.facts["b.jar"] = jar(b)
        return result
    }

    /// A session's cookie jar as sorted `name=value` lines.
    static func jar(_ session: URLSession) -> String {
        (session.configuration.httpCookieStorage?.cookies ?? []).map { "\($0.name)=\($0.value)" }.sorted().joined(separator: ";")
    }

    /// Timeouts and cancellation.
    static let timing: [DifferentialScenario] = [
        DifferentialScenario("timeout-request") { context in
            var result = DifferentialResult()
            let session = context.session { $0.timeoutIntervalForRequest = 1 }
            let (data, response, error) = await session.dataTaskResult(URLRequest(url: context.url("/slow?ms=3000")))
            result.record("configuration", data: data, response: response, error: error)
            var request = URLRequest(url: context.url("/slow?ms=3000"))
            request.timeoutInterval = 1
            let (requestData, requestResponse, requestError) = await context.session().dataTaskResult(request)
            result.record("request", data: requestData, response: requestResponse, error: requestError)
            return result
        },
        DifferentialScenario("timeout-resource") { context in
            var result = DifferentialResult()
            let session = context.session { $0.timeoutIntervalForResource = 1 }
            let (data, response, error) = await session.dataTaskResult(URLRequest(url: context.url("/drip?n=20&ms=100")))
            result.record("resource", data: data, response: response, error: error)
            return result
        },
    ]
}
