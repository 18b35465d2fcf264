import CCurl
import Foundation
import HTTPDNSCore
import Synchronization

/// One `curl_multi` handle driven by its own thread.
///
/// Every easy handle is added, removed, unpaused and cleaned up on the loop thread, and every
/// libcurl callback runs there, so the multi handle, its connection cache and the `active` table
/// need no lock. Other threads only touch the `inbox` (behind a mutex) and call
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread, only when the loop
/// said it is going to wait (``Inbox/waiting``). The wakeup is sent after the mutex is released: the
/// loop it wakes takes that mutex first, and woken while the waker still held it, it slept on it
/// and had to be woken a second time (bench row 2: a futex wake in every submit's profile). A
/// waker is counted under the mutex before it lets go, and the loop cleans up the multi handle only
/// once no counted waker is left, so a wakeup never races `curl_multi_cleanup`.
final class CurlEventLoop: @unchecked Sendable {
    private struct Inbox {
        var added: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var resumed: [CurlTransfer] = []
        var stopping = false
        var closed = false
        /// The loop found nothing to do and is (about to be) waiting in `curl_multi_poll`: the next
        /// hand-over must wake it. While it is busy it reads the inbox again before it waits, so a
        /// hand-over then costs no wakeup (a `send` on libcurl's socket pair, and the loop's `recv`:
        /// a quarter of the pool threads' time in bench row 5 when every request woke it).
        var waiting = false
    }

    private let inbox = HTTPDNSLock(Inbox())
    /// The `CURLM *`; used on the loop thread, plus `curl_multi_wakeup` by counted wakers.
    private let multi: UnsafeMutableRawPointer
    /// Threads between claiming a wakeup (under `inbox`) and having sent it; the multi handle is
    /// cleaned up only at 0.
    private let wakers = Atomic<Int>(0)
    /// Transfers in the multi handle, by easy handle. Loop thread only.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// The loop thread's `pthread_self()`, 0 until it runs.
    private let loopThread = Atomic<UInt>(0)
    /// Work gathered during one turn of the loop (loop thread only): transfers' ends and what
    /// delegates deferred (``afterTurn(_:)``), run together at the turn's end
    /// (``runDeferred()``); nil once the loop has left its turns (the shutdown reports at once).
    private var deferred: [@Sendable () -> Void]? = []
    /// Signalled when the loop thread has cleaned up the multi handle and is about to end.
    private let stopped = DispatchSemaphore(value: 0)
    static let threadName = "HTTPDNSTransport.curl"

    init(configuration: HTTPTransport.Configuration) {
        _ = CurlGlobal.initialized
        guard let multi = curl_multi_init() else {
            // Only fails when out of memory at startup; nothing sensible can continue.
            fatalError("curl_multi_init failed")
        }
        self.multi = multi
        _ = httpdns_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = httpdns_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxCachedConnections)
        _ = httpdns_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        let thread = Thread { [self] in run() }
        thread.name = Self.threadName
        thread.start()
    }

    /// Hands a configured transfer to the loop. Fails it with `cancelled` when the loop has stopped.
    func submit(_ transfer: CurlTransfer) {
        let accepted = handOver { inbox in
            guard !inbox.stopping, !inbox.closed else { return false }
            inbox.added.append(transfer)
            return true
        }
        if !accepted {
            transfer.finish(error: HTTPTransportError(.cancelled, "the transport was shut down", host: transfer.host))
        }
    }

    /// Asks the loop to remove `transfer` now.
    func cancel(_ transfer: CurlTransfer) {
        handOver { inbox in
            guard !inbox.closed else { return false }
            inbox.cancelled.append(transfer)
            return true
        }
    }

    /// Asks the loop to resume receiving for `transfer`, paused by its receive buffer.
    ///
    /// `curl_easy_pause` must run on the thread that drives the multi handle, so other threads queue
    /// the transfer here. A transfer that ended (or was never paused) meanwhile is skipped.
    func resume(_ transfer: CurlTransfer) {
        handOver { inbox in
            guard !inbox.closed else { return false }
            inbox.resumed.append(transfer)
            return true
        }
    }

    /// Waits (up to `timeout`) until the loop thread has released libcurl's and OpenSSL's state.
    ///
    /// A process that exits while the loop still frees TLS contexts races OpenSSL's own exit-time
    /// cleanup (a crash seen under ThreadSanitizer). Does not wait when called on a loop thread.
    func waitUntilStopped(timeout: DispatchTimeInterval) {
        guard Thread.current.name != Self.threadName else { return }
        if stopped.wait(timeout: .now() + timeout) == .success { stopped.signal() }
    }

    /// Stops the thread; transfers still running complete with `cancelled`.
    func shutdown() {
        handOver { inbox in
            guard !inbox.closed, !inbox.stopping else { return false }
            inbox.stopping = true
            return true
        }
    }

    /// Reports a transfer's end to its delegate: at the end of this turn when called from the
    /// loop thread during one, at once otherwise.
    ///
    /// A delegate's end usually wakes a task (a continuation resumed: a futex wake when the pool
    /// sleeps). Several ends of one turn are handed to the pool in one job, so the loop thread pays
    /// one wake-up for all of them and is back in libcurl sooner (bench row 5: the ends' wake-ups
    /// were a fifth of the loop thread's time with 16 transfers in flight).
    func complete(_ delegate: any HTTPTransportDelegate, _ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        afterTurn { delegate.didComplete(result) }
    }

    /// Runs `work` at the end of this turn when called from the loop thread during one (with the
    /// turn's other deferred work, see ``complete(_:_:)``), at once otherwise.
    func afterTurn(_ work: @escaping @Sendable () -> Void) {
        // The thread is compared first: only the loop thread reads `deferred`.
        if loopThread.load(ordering: .relaxed) == UInt(pthread_self()), deferred != nil {
            deferred!.append(work)
        } else {
            work()
        }
    }

    /// Runs the work gathered this turn: one item here (a job would only add a hop), several in
    /// one job on the global pool, in the order they were gathered.
    private func runDeferred() {
        guard let gathered = deferred, !gathered.isEmpty else { return }
        deferred = []
        if gathered.count == 1 {
            gathered[0]()
            return
        }
        DispatchQueue.global().async { for work in gathered { work() } }
    }

    /// Applies `change` to the inbox under its lock and, when it handed something over (true) and
    /// the loop waits or is about to, wakes the loop once the lock is released (once per wait; the
    /// waker is counted meanwhile, see ``wakers``).
    /// - Returns: what `change` returned.
    @discardableResult
    private func handOver(_ change: (inout Inbox) -> Bool) -> Bool {
        let (handed, mustWake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard change(&inbox) else { return (false, false) }
            guard inbox.waiting else { return (true, false) }
            inbox.waiting = false
            wakers.add(1, ordering: .relaxed)
            return (true, true)
        }
        if mustWake {
            curl_multi_wakeup(multi)
            wakers.subtract(1, ordering: .releasing)
        }
        return handed
    }

    private func run() {
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        while true {
            let (added, cancelled, resumed, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.added.removeAll()
                    inbox.cancelled.removeAll()
                    inbox.resumed.removeAll()
                }
                inbox.waiting = false
                return (inbox.added, inbox.cancelled, inbox.resumed, inbox.stopping)
            }
            if stopping {
                for transfer in added { transfer.finish(error: transfer.cancelledError) }
                break
            }
            for transfer in added { add(transfer) }
            for transfer in cancelled {
                guard let easy = transfer.easy, active[easy] === transfer else { continue }
                remove(transfer, keepConnection: false)
                transfer.finish(error: transfer.cancelledError)
            }
            for transfer in resumed { unpause(transfer) }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            // Transfers ended while others remain, one of which libcurl may keep pending (below).
            let ended = readMessages() && !active.isEmpty
            runDeferred()
            // Waits only with nothing handed over meanwhile (callbacks of this turn may have); the
            // mark is set under the lock hand-overs take, so one arriving after it wakes the wait
            // (libcurl keeps the wakeup until `curl_multi_poll` sees it). A turn that ended
            // transfers while others remain does not wait either: an ended transfer's connection
            // may be free for one libcurl keeps pending (`HTTPTransport.Configuration
            // .maxConnectionsPerHost`), which libcurl 7.88 may start only in a later
            // `curl_multi_perform`, without shortening the wait (bench row 3, 100 lookups at once
            // to one host: a round in about twenty slept the whole second; none in 98 since).
            let wait = inbox.withLock { inbox -> Bool in
                inbox.waiting = !ended && inbox.added.isEmpty && inbox.cancelled.isEmpty && inbox.resumed.isEmpty && !inbox.stopping
                return inbox.waiting
            }
            var ready: Int32 = 0
            // libcurl shortens this wait to its own next timeout; wakeups end it early.
            _ = curl_multi_poll(multi, nil, 0, wait ? 1000 : 0, &ready)
        }
        runDeferred()
        deferred = nil
        for transfer in Array(active.values) {
            remove(transfer)
            transfer.finish(error: transfer.cancelledError)
        }
        let late = inbox.withLock { inbox -> [CurlTransfer] in
            inbox.closed = true
            defer { inbox.added.removeAll() }
            return inbox.added
        }
        for transfer in late { transfer.finish(error: transfer.cancelledError) }
        // No wakeup can be claimed any more (the loop no longer says it waits); one claimed before
        // is a `send` away from done.
        while wakers.load(ordering: .acquiring) != 0 { sched_yield() }
        curl_multi_cleanup(multi)
        stopped.signal()
    }

    private func add(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy else { return }
        if transfer.isCancelled {
            transfer.finish(error: transfer.cancelledError)
            return
        }
        let code = curl_multi_add_handle(multi, easy)
        guard code == CURLM_OK else {
            let text = String(cString: curl_multi_strerror(code))
            transfer.finish(error: HTTPTransportError(.unknown, "curl_multi_add_handle: \(text)", host: transfer.host))
            return
        }
        active[easy] = transfer
    }

    /// Lifts the receive pause of `transfer` (loop thread).
    ///
    /// libcurl hands the chunk it kept at the pause to the write callback again from inside
    /// `curl_easy_pause`, which may pause once more (the buffer records it again) or fail: a failure
    /// there (the callback refused the bytes, as `maxResponseBytes` does) is not seen by the multi
    /// handle, so the transfer is ended here with it. `CURLPAUSE_CONT` also clears a send pause;
    /// this transport never pauses sending.
    private func unpause(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy, active[easy] === transfer else { return }
        let code = httpdns_easy_unpause(easy)
        guard code != CURLE_OK else { return }
        remove(transfer, keepConnection: false)
        transfer.finish(code: code)
    }

    /// Takes `transfer` out of the multi handle.
    ///
    /// - Parameter keepConnection: false for a cancelled transfer still running: libcurl 7.88 sends
    ///   no RST_STREAM for an unfinished HTTP/2 transfer and keeps its connection for reuse, so the
    ///   server would go on sending. Forbidding reuse before the removal closes the connection (when
    ///   no other stream shares it) and stops the server. (It has no effect on a transfer libcurl
    ///   already finished.)
    private func remove(_ transfer: CurlTransfer, keepConnection: Bool = true) {
        guard let easy = transfer.easy else { return }
        active[easy] = nil
        if !keepConnection { _ = httpdns_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1) }
        _ = curl_multi_remove_handle(multi, easy)
    }

    /// Ends the transfers libcurl reports done.
    /// - Returns: whether any ended.
    private func readMessages() -> Bool {
        var queued: Int32 = 0
        var ended = false
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let transfer = active[easy]
            else { continue }
            let result = message.pointee.data.result
            remove(transfer)
            transfer.finish(code: result)
            ended = true
        }
        return ended
    }
}

/// `curl_global_init` exactly once per process, before the first handle is made.
enum CurlGlobal {
    static let initialized: Bool = httpdns_curl_global_init() == CURLE_OK
}
