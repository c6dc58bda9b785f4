import Nftables
import Plan
import Routing
import SocketPrograms

/// An applier that keeps what it was asked in memory: every desired state applied, in
/// order, every batch of run-time elements, the teardowns. It answers reads from that
/// record (the elements of a set: the applied state's and the ones added since), so the
/// daemon's decisions can be checked against what they asked the kernel for.
public final class FakeKernelApplier: KernelApplying {
    /// Every state `apply` was called with, in order (also those it failed).
    public private(set) var applied: [DesiredState] = []
    /// Every batch of run-time elements, in order.
    public private(set) var elementBatches: [[String: [NftElement]]] = []
    public private(set) var teardowns = 0
    /// The state in force: the last one applied without failing (nil after a teardown).
    public private(set) var current: DesiredState?
    /// Thrown by the next apply (once), as a kernel refusal would be.
    public var failNextApply: (any Error)?
    /// Thrown by the next addRuntimeElements (once); the batch is recorded, not taken.
    public var failNextElements: (any Error)?
    /// Counts to answer for counters of the applied state (others read as it has them: zero).
    public var counterValues: [String: NftCounter] = [:]
    /// Counters to answer for socket program attachments, by cgroup (others: the applied
    /// settings with zero counts).
    public var storageValues: [String: SocketStorage] = [:]
    private var added: [String: [NftElement]] = [:]

    public init() {}

    public func apply(_ state: DesiredState) throws {
        applied.append(state)
        if let failure = failNextApply {
            failNextApply = nil
            throw failure
        }
        current = state
        // As the real one finds them at its apply: the planned cgroups the kernel refuses.
        unguardedCgroups = refusedPrograms.filter { refused in state.socketPrograms.contains { $0.cgroup == refused.key } }
    }

    public func addRuntimeElements(_ bySet: [String: [NftElement]]) throws {
        guard current != nil else { throw ApplyError.noTableApplied }
        elementBatches.append(bySet)
        if let failure = failNextElements {
            failNextElements = nil
            throw failure
        }
        for (set, elements) in bySet {
            let keys = Set(elements.map(\.key))
            added[set, default: []].removeAll { keys.contains($0.key) }
            added[set, default: []] += elements
        }
    }

    /// Learned routes it was told were deleted; none is wanted here (the fake keeps no book).
    public private(set) var deletedLearnedRoutes: [[Route]?] = []

    public func restoreLearnedRoutes(_ deleted: [Route]?) throws -> [Route] {
        deletedLearnedRoutes.append(deleted)
        return []
    }

    public func elements(of set: String, ipv4: Bool) throws -> [NftElement] {
        (current?.nft.set(named: set)?.elements ?? []) + (added[set] ?? [])
    }

    public func counters() throws -> [String: NftCounter] {
        guard let current else { throw ApplyError.noTableApplied }
        return Dictionary(current.nft.counters.map { ($0.name, counterValues[$0.name] ?? $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The attachments of the state in force: the fake attaches what it is asked to.
    public var socketProgramsAttached: [SocketProgramAttachment]? { current?.socketPrograms.filter { unguardedCgroups[$0.cgroup] == nil } }

    /// What a test makes the kernel refuse: these cgroups' programs, once planned.
    public var refusedPrograms: [String: UnguardedCgroup] = [:]
    /// The planned cgroups whose programs the last apply found refused.
    public private(set) var unguardedCgroups: [String: UnguardedCgroup] = [:]

    public var socketProgramsPutBack = 0

    /// What a test makes the programs have seen.
    public var seenNamespaces: [ForeignNamespaces.Seen] = []

    public func foreignNamespaces() -> [ForeignNamespaces.Seen] { seenNamespaces }

    public func socketStorage(of attachment: SocketProgramAttachment) -> SocketStorage? {
        storageValues[attachment.cgroup] ?? SocketStorage(settings: attachment.settings, owner: 0)
    }

    public func teardown() throws {
        teardowns += 1
        current = nil
        added = [:]
    }
}
