import Foundation
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Drives one ``HTTPDNSURLProtocol`` load: starts the client request as `URLSession` would have
/// sent it, and hands the events to the protocol's `URLProtocolClient` on the task's work queue.
///
/// swift-corelibs-foundation requires every `URLProtocolClient` call to run on the task's
/// `workQueue`; all state here is touched only there (transport events hop onto it in order).
///
/// - Data tasks reported to the session's delegate get each chunk as it arrives (`didLoad`);
///   completion-handler tasks get the whole body once at the end, because corelibs keeps only the
///   last `didLoad` chunk for them; a per-task data delegate (`data(for:delegate:)`) still sees
///   each chunk.
/// - Download tasks get their body written to a file, handed over as `location`; a download
///   delegate gets `didWriteData` per chunk.
/// - Idle timeout: the request's `timeoutInterval` when it was set, else the configuration's
///   `timeoutIntervalForRequest` (corelibs' rule); the configuration's
///   `timeoutIntervalForResource` bounds the whole load, redirects included.
final class ProtocolForwarder: HTTPDNSClientDelegate, @unchecked Sendable {
    private var owner: HTTPDNSURLProtocol?
    let task: URLSessionTask
    let session: URLSession
    let queue: DispatchQueue
    let layout: CorelibsLayout
    private let isDownload: Bool
    /// How the task reports, and the per-task delegate of the async API (read in `startLoading`).
    private let reporting: CorelibsReporting
    private let taskDelegate: URLSessionTaskDelegate?

    // Touched only on `queue`.
    private var stopped = false
    private var finished = false
    private var clientTask: HTTPDNSClientTask?
    private var body = Data()
    private var download: DownloadFile?
    private var resourceDeadline: ResourceDeadlines.Token?
    private var bytesSent: Int64 = 0
    /// What a retry needs: the client, the request as sent, its options.
    var launched: (client: HTTPDNSClient, request: URLRequest, options: RequestOptions)?
    /// A 401 held back while its challenge is answered (see `ProtocolForwarder+Challenge`).
    var challenge = ChallengeState()

    init(
        owner: HTTPDNSURLProtocol, task: URLSessionTask, session: URLSession, layout: CorelibsLayout,
        reporting: CorelibsReporting, taskDelegate: URLSessionTaskDelegate?
    ) {
        self.owner = owner
        self.task = task
        self.session = session
        self.layout = layout
        self.queue = layout.workQueue(of: task)
        self.isDownload = task is URLSessionDownloadTask
        self.reporting = reporting
        self.taskDelegate = taskDelegate
    }

    /// Starts the load; called on the work queue by `startLoading`, with the task's own body
    /// (`knownBody`) for an upload task.
    func start(_ request: URLRequest, body taskBody: CorelibsLayout.TaskBody?, client: HTTPDNSClient) {
        let configuration = session.configuration
        var request = request
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
            guard let name = name.base as? String, let value = value as? String,
                  request.value(forHTTPHeaderField: name) == nil
            else { continue }
            request.setValue(value, forHTTPHeaderField: name)
        }
        var options = RequestOptions()
        if configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage {
            options.cookies = .storeOnly(storage)
        }
        options.idleTimeout = idleTimeout(request, configuration: configuration)
        options.decodesContent = true
        options.bodyProgress = { [weak self] count in
            guard let self else { return }
            queue.async { self.reportSent(count) }
        }
        // Weak: `launched` keeps these options, and corelibs never calls `stopLoading` after a load
        // that finished, so a strong capture leaked every forwarder with its task and session.
        options.redirect = { [weak self] response, next in
            guard let self else { return next }  // stopped: the transfer is cancelled anyway
            return await askRedirect(response, next)
        }
        options.newBodyStream = { [weak self] in await self?.askNewBodyStream() }
        armResourceTimeout(configuration.timeoutIntervalForResource)

        if taskBody == nil, request.httpBody == nil, request.httpBodyStream == nil, task is URLSessionUploadTask {
            // A streamed upload task (`uploadTask(withStreamedRequest:)`): its body comes from the
            // delegate, as corelibs asks for it.
            let pending = options
            let request = request
            Task { [self] in
                let stream = UncheckedBox(await askNewBodyStream())
                queue.async { [self] in
                    var options = pending
                    options.body = stream.value.map { RequestBody(stream: $0, length: Self.length(request), newStream: pending.newBodyStream) } ?? .empty
                    launch(request, client: client, options: options)
                }
            }
            return
        }
        do {
            options.body = try Self.body(taskBody, request: request, newStream: options.newBodyStream)
        } catch {
            finish(error: error)
            return
        }
        launch(request, client: client, options: options)
    }

    func launch(_ request: URLRequest, client: HTTPDNSClient, options: RequestOptions) {
        guard !stopped, !finished else { return }
        launched = (client, request, options)
        clientTask = client.start(request, followRedirects: true, options: options, delegate: ForwarderRelay(self))
    }

    /// No calls reach the client after `stopLoading`; the transfer is cancelled.
    func stop() {
        stopped = true
        clientTask?.cancel()
        clientTask = nil
        resourceDeadline.map(ResourceDeadlines.shared.cancel)
        download?.discard()
        download = nil
        owner = nil
    }

    // MARK: Events from the client (any thread)

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        queue.async { [self] in
            guard let owner, !stopped, !finished, let client = owner.client else { return }
            if holdForChallenge(response) { return }
            if isDownload {
                do {
                    download = try DownloadFile(expectedLength: response.expectedContentLength)
                } catch {
                    clientTask?.cancel()
                    finish(error: error)
                    return
                }
            }
            client.urlProtocol(owner, didReceive: response, cacheStoragePolicy: .notAllowed)
        }
    }

    func didReceive(data: Data) {
        queue.async { [self] in
            guard let owner, !stopped, !finished, let client = owner.client else { return }
            if challenge.held != nil {
                challenge.keep(data)
                return
            }
            if let download {
                do {
                    try download.write(data)
                } catch {
                    clientTask?.cancel()
                    finish(error: error)
                    return
                }
                reportDownloadProgress(download, chunk: data.count)
                return
            }
            if reporting == .delegate {
                client.urlProtocol(owner, didLoad: data)
                return
            }
            body.append(data)
            if let dataDelegate = taskDelegate as? URLSessionDataDelegate, let dataTask = task as? URLSessionDataTask {
                let delegate = dataDelegate
                let session = session
                session.delegateQueue.addOperation {
                    delegate.urlSession(session, dataTask: dataTask, didReceive: data)
                }
            }
        }
    }

    func didComplete(error: (any Error)?) {
        queue.async { [self] in
            if error == nil, challenge.held != nil, !stopped, !finished {
                answerChallenge()
                return
            }
            finish(error: error)
        }
    }

    /// Ends the load once: the file or the whole body, then the completion; or the error.
    func finish(error: (any Error)?) {
        guard let owner, !stopped, !finished else { return }
        finished = true
        resourceDeadline.map(ResourceDeadlines.shared.cancel)
        // The client's task outlives the load (it keeps its last transfer): let go of it now.
        clientTask = nil
        defer { self.owner = nil }
        guard let client = owner.client else { return }
        if let error {
            download?.discard()
            client.urlProtocol(owner, didFailWithError: error)
            return
        }
        if isDownload {
            do {
                let file = try download ?? DownloadFile(expectedLength: 0)
                let location = try file.close()
                do {
                    try layout.setProperty(location, for: .temporaryFileURL, on: owner)
                } catch {
                    file.discard()
                    throw error
                }
            } catch {
                client.urlProtocol(owner, didFailWithError: error)
                return
            }
        } else if reporting != .delegate, !body.isEmpty {
            client.urlProtocol(owner, didLoad: body)
            body = Data()
        }
        rememberCredential()
        client.urlProtocolDidFinishLoading(owner)
    }

    func setResourceDeadline(_ token: ResourceDeadlines.Token) {
        resourceDeadline = token
    }

    /// The resource timeout fired (on the work queue).
    func resourceTimedOut() {
        guard !stopped, !finished else { return }
        clientTask?.cancel()
        finish(error: URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The resource timeout (timeoutIntervalForResource) expired.",
            NSURLErrorFailingURLErrorKey: task.originalRequest?.url as Any,
        ]))
    }

    /// `didSendBodyData`, to the delegate corelibs would tell (the session's, or the per-task one).
    private func reportSent(_ count: Int) {
        guard !stopped, !finished else { return }
        bytesSent += Int64(count)
        guard let delegate = reporting == .delegate ? task.delegate : taskDelegate else { return }
        let expected = launched?.options.body?.length ?? NSURLSessionTransferSizeUnknown
        let (session, task, total) = (session, task, bytesSent)
        session.delegateQueue.addOperation {
            delegate.urlSession(session, task: task, didSendBodyData: Int64(count), totalBytesSent: total, totalBytesExpectedToSend: expected)
        }
    }

    private func reportDownloadProgress(_ download: DownloadFile, chunk: Int) {
        let delegate: URLSessionTaskDelegate? = reporting == .delegate ? task.delegate : taskDelegate
        guard let downloadDelegate = delegate as? URLSessionDownloadDelegate, let downloadTask = task as? URLSessionDownloadTask else { return }
        let target = downloadDelegate
        let session = session
        let (written, expected) = (download.written, download.expectedLength)
        session.delegateQueue.addOperation {
            target.urlSession(session, downloadTask: downloadTask, didWriteData: Int64(chunk), totalBytesWritten: written, totalBytesExpectedToWrite: expected)
        }
    }
}

/// The client's delegate for one load: hands the events to the forwarder while it exists.
///
/// What the client keeps after a load ends (its task keeps the last transfer, and the transfer its
/// delegate) must not keep the forwarder, with its task, session and body: corelibs lets go of the
/// protocol when the load ends, and the forwarder should go with it.
private final class ForwarderRelay: HTTPDNSClientDelegate {
    private weak let forwarder: ProtocolForwarder?

    init(_ forwarder: ProtocolForwarder) {
        self.forwarder = forwarder
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        forwarder?.didReceive(response: response, connection: connection)
    }

    func didReceive(data: Data) {
        forwarder?.didReceive(data: data)
    }

    func didComplete(error: (any Error)?) {
        forwarder?.didComplete(error: error)
    }
}
