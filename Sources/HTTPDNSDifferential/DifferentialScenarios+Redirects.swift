import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DifferentialScenarios {
    /// 301/302/303/307/308 after a POST, followed by a delegate and refused by another, and
    /// `Authorization` on a redirect to another host.
    static let redirects: [DifferentialScenario] = [301, 302, 303, 307, 308].flatMap { code in
        [true, false].map { follow in
            DifferentialScenario("redirect-\(code)-\(follow ? "follow" : "refuse")") { context in
                var result = DifferentialResult()
                var request = URLRequest(url: context.url("/r\(code)"))
                request.httpMethod = "POST"
                request.httpBody = DifferentialPayload.bytes(1000)
                request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
                var options = RecordingDelegate.Options()
                options.followRedirects = follow
                let delegate = RecordingDelegate(options)
                context.session(delegate: delegate).dataTask(with: request).resume()
                await delegate.finish(&result, label: "redirect")
                return result
            }
        }
    } + [
        DifferentialScenario("authorization-cross-host-redirect") { context in
            var result = DifferentialResult()
            var request = URLRequest(url: context.url("/cross"))
            request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
            let (data, response, error) = await context.session().dataTaskResult(request)
            result.record("cross", data: data, response: response, error: error)
            var same = URLRequest(url: context.url("/r302"))
            same.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
            let (sameData, sameResponse, sameError) = await context.session().dataTaskResult(same)
            result.record("same-host", data: sameData, response: sameResponse, error: sameError)
            return result
        },
    ]
}
