import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DifferentialScenarios {
    /// Uploads: a stream, a 64 MiB file, and the three upload API shapes.
    static let uploads: [DifferentialScenario] = [
        DifferentialScenario("upload-stream") { context in
            var result = DifferentialResult()
            let file = try DifferentialPayload.file(64 << 20, in: context.bed.scratch)
            var request = URLRequest(url: context.url("/echo"))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(url: file)
            request.setValue(String(64 << 20), forHTTPHeaderField: "Content-Length")
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let (data, response, error) = await context.session().dataTaskResult(request)
            result.record("stream-64MiB", data: data, response: response, error: error)
            return result
        },
        DifferentialScenario("upload-file-64MiB") { context in
            var result = DifferentialResult()
            let file = try DifferentialPayload.file(64 << 20, in: context.bed.scratch)
            var request = URLRequest(url: context.url("/echo"))
            request.httpMethod = "PUT"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let (data, response) = try await context.session().upload(for: request, fromFile: file)
            result.record("file-64MiB", data: data, response: response, error: nil)
            return result
        },
        DifferentialScenario("upload-apis") { context in
            var result = DifferentialResult()
            let payload = DifferentialPayload.bytes(200_000)
            var request = URLRequest(url: context.url("/echo"))
            request.httpMethod = "POST"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let session = context.session()
            let (fromData, fromDataResponse) = try await session.upload(for: request, from: payload)
            result.record("upload(for:from:)", data: fromData, response: fromDataResponse, error: nil)
            let file = try DifferentialPayload.file(300_000, in: context.bed.scratch)
            let (fromFile, fromFileResponse) = try await session.upload(for: request, fromFile: file)
            result.record("upload(for:fromFile:)", data: fromFile, response: fromFileResponse, error: nil)
            let (data, response, error) = await session.uploadTaskResult(request, from: payload)
            result.record("uploadTask(with:from:)", data: data, response: response, error: error)
            return result
        },
        DifferentialScenario("upload-progress") { context in
            var result = DifferentialResult()
            var request = URLRequest(url: context.url("/echo"))
            request.httpMethod = "POST"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            var options = RecordingDelegate.Options()
            options.recordsUploadProgress = true
            let delegate = RecordingDelegate(options)
            context.session(delegate: delegate).uploadTask(with: request, from: DifferentialPayload.bytes(1 << 20)).resume()
            await delegate.finish(&result, label: "upload")
            return result
        },
    ]

    /// Downloads: the async API, a completion handler, a delegate.
    static let downloads: [DifferentialScenario] = [
        DifferentialScenario("download-apis") { context in
            var result = DifferentialResult()
            let source = context.url("/bytes?n=1000000")
            let session = context.session()
            let (location, response) = try await session.download(from: source)
            let data = try Data(contentsOf: location)
            try? FileManager.default.removeItem(at: location)
            result.record("download(from:)", data: data, response: response, error: nil)
            let (handled, handledResponse, error) = await session.downloadTaskResult(source)
            result.record("downloadTask(with:completionHandler:)", data: handled, response: handledResponse, error: error)
            let delegate = RecordingDelegate()
            context.session(delegate: delegate).downloadTask(with: source).resume()
            await delegate.finish(&result, label: "downloadTask+delegate")
            return result
        },
    ]
}
