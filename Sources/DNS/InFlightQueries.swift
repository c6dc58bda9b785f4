import Monotonic

/// The queries waiting for an upstream answer, by the ID they were sent with. IDs are unique
/// across servers (not merely per server), so a retry to the next server keeps its ID and an
/// answer is accepted only from a server the query was sent to. Deadlines are kept in the
/// order they were set (the timeout is one constant and time only moves forward), so the
/// earliest is always at the front; entries superseded by a retry or an answer are skipped
/// when reached and compacted away before they outnumber the live ones.
struct InFlightQueries<Client: Hashable> {
    struct Query {
        var client: Client
        var clientID: UInt16
        var transport: DNSTransport
        /// The query as sent upstream (with the upstream ID).
        var bytes: [UInt8]
        var firstServer: Int
        var attempts: Int
        var generation: UInt64
    }

    private struct Deadline {
        var id: UInt16
        var generation: UInt64
        var at: UInt64
    }

    private var queries: [UInt16: Query] = [:]
    private var deadlines: [Deadline] = []
    private var head = 0
    private var generation: UInt64 = 0

    init(capacity: Int) {
        queries.reserveCapacity(capacity)
    }

    var count: Int { queries.count }

    subscript(id: UInt16) -> Query? { queries[id] }

    /// An ID no query in flight has: random draws first (unpredictable to an off-path
    /// spoofer), then the next free one after the last draw, which always exists while fewer
    /// than 65,536 are in flight.
    func freeID(using random: inout any RandomNumberGenerator) -> UInt16 {
        var id = UInt16(truncatingIfNeeded: random.next())
        for _ in 0..<16 where queries[id] != nil {
            id = UInt16(truncatingIfNeeded: random.next())
        }
        while queries[id] != nil { id &+= 1 }
        return id
    }

    mutating func insert(_ query: Query, id: UInt16, deadline: MonotonicInstant) {
        var query = query
        query.generation = nextGeneration()
        queries[id] = query
        push(Deadline(id: id, generation: query.generation, at: deadline.nanoseconds))
    }

    /// A new deadline for a query sent again.
    mutating func rearm(_ id: UInt16, deadline: MonotonicInstant) {
        guard queries[id] != nil else { return }
        let generation = nextGeneration()
        queries[id]!.generation = generation
        queries[id]!.attempts += 1
        push(Deadline(id: id, generation: generation, at: deadline.nanoseconds))
    }

    @discardableResult
    mutating func remove(_ id: UInt16) -> Query? {
        queries.removeValue(forKey: id)
    }

    /// The query whose deadline is the earliest, if that deadline is not after `now` (nil
    /// `now`: whatever its deadline). It stays in flight until removed or re-armed.
    mutating func earliest(dueBy now: MonotonicInstant?) -> (id: UInt16, query: Query)? {
        while head < deadlines.count {
            let deadline = deadlines[head]
            // Later deadlines are later still: nothing is due, whatever this one's state.
            if let now, deadline.at > now.nanoseconds { return nil }
            head += 1
            if let query = queries[deadline.id], query.generation == deadline.generation { return (deadline.id, query) }
        }
        return nil
    }

    /// When the earliest live deadline falls.
    mutating func nextDeadline() -> MonotonicInstant? {
        while head < deadlines.count {
            let deadline = deadlines[head]
            if let query = queries[deadline.id], query.generation == deadline.generation { return MonotonicInstant(nanoseconds: deadline.at) }
            head += 1
        }
        return nil
    }

    private mutating func nextGeneration() -> UInt64 {
        generation += 1
        return generation
    }

    private mutating func push(_ deadline: Deadline) {
        if deadlines.count - head > 2 * queries.count + 64 {
            deadlines = deadlines[head...].filter { queries[$0.id]?.generation == $0.generation }
            head = 0
        } else if head > 0, head >= deadlines.count / 2 {
            deadlines.removeFirst(head)
            head = 0
        }
        deadlines.append(deadline)
    }
}
