import ConcordCore

/// The loop's waiting: callers waiting for a ``AutoSync/Status`` condition, and the loop's
/// own sleep between deadlines.
extension AutoSync {
    /// Suspends until `condition` holds of ``status`` (checked now and after every change of
    /// it), and returns true; returns whether it holds once the loop has stopped, and false
    /// if the calling task is cancelled first. For tests, and for tools that wait for a
    /// particular outcome ("until the first successful sync").
    public func wait(until condition: @escaping @Sendable (Status) -> Bool) async -> Bool {
        if condition(status) { return true }
        if phase == .stopped { return false }
        nextWaiter += 1
        let id = nextWaiter
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiters[id] = Waiter(condition: condition, continuation: continuation)
                if Task.isCancelled { cancelWaiter(id) }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    func cancelWaiter(_ id: Int) {
        waiters.removeValue(forKey: id)?.continuation.resume(returning: false)
    }

    /// Resumes the waiters whose condition now holds.
    func changed() {
        guard !waiters.isEmpty else { return }
        let current = status
        for (id, waiter) in waiters where waiter.condition(current) {
            waiters[id] = nil
            waiter.continuation.resume(returning: true)
        }
    }

    /// Sleeps until `deadline` (forever when nil) or until ``wake()``.
    func sleep(until deadline: UInt64?) async {
        sleepGeneration += 1
        let generation = sleepGeneration
        sleepingUntil = deadline
        if let deadline {
            let scheduler = self.scheduler
            timer = Task { [weak self] in
                do { try await scheduler.sleep(until: deadline) } catch { return }
                await self?.timerFired(generation)
            }
        }
        await withCheckedContinuation { continuation in
            wakeUp = continuation
        }
    }

    func timerFired(_ generation: Int) {
        guard generation == sleepGeneration else { return }  // a later sleep's business
        wake()
    }

    /// Ends the loop's current sleep (if it sleeps) so it looks at the plan again.
    func wake() {
        timer?.cancel()
        timer = nil
        wakeUp?.resume()
        wakeUp = nil
    }
}
