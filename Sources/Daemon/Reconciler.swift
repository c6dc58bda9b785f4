import Plan
import Policy
import TrustedFiles
import TunnelFiles
import Applying

/// What happens around a reconciler's pass; the reconciler decides when. The daemon is the
/// one that takes these steps, with its parts.
protocol PassSteps: AnyObject {
    /// Before the facts are read: the profile cgroups made (their ids are facts).
    func prepare(_ policy: Policy) throws
    /// After the first apply (the killswitch is in place): the built-in tunnels started or
    /// stopped; true when a second apply is due, for the routes to their new interfaces.
    func reconcileTunnels() -> Bool
    /// After each apply that succeeded, with the facts of the one before.
    func applied(_ facts: RuntimeFacts, before: RuntimeFacts?)
    /// After each pass, whether it succeeded or not.
    func passEnded()
}

extension PassSteps {
    func prepare(_ policy: Policy) throws {}
    func reconcileTunnels() -> Bool { false }
    func applied(_ facts: RuntimeFacts, before: RuntimeFacts?) {}
    func passEnded() {}
}

/// The policy in force and the kernel state planned from it: each pass reads the facts,
/// plans and applies through the applier, and a reload either puts a new policy in force
/// or leaves the old one (refused before anything changed, or restored and re-applied
/// when applying failed). What happens around a pass (cgroups made, built-in tunnels
/// started, the log) are the daemon's steps (PassSteps); the decisions are here, testable with a fake
/// applier and fake facts.
final class Reconciler {
    let applier: any KernelApplying
    let factsSource: any RuntimeFactsSource
    let reader: PolicyReader
    private(set) var policy: Policy
    /// The files `policy` was read from.
    private(set) var sources: [PolicySource]
    /// The built-in tunnels' files, read with the policy they belong to.
    private(set) var tunnelFiles: [String: TunnelFiles.Loaded]
    /// The facts the kernel state was last planned from (nil until an apply succeeded, and
    /// while one is under way).
    private(set) var appliedFacts: RuntimeFacts?
    private var lastPlan: (policy: Policy, facts: RuntimeFacts, state: DesiredState)?

    /// What the daemon does around each pass (none: the passes alone, as `vpnctl plan` and
    /// some tests run them).
    weak var steps: (any PassSteps)?

    init(policy: LoadedPolicy, applier: any KernelApplying, facts: any RuntimeFactsSource, reader: PolicyReader = .trusted) {
        self.reader = reader
        self.policy = policy.policy
        sources = policy.sources
        tunnelFiles = policy.tunnelFiles
        self.applier = applier
        factsSource = facts
    }

    func facts(for policy: Policy? = nil) throws -> RuntimeFacts {
        try factsSource.facts(for: policy ?? self.policy, tunnelFiles: tunnelFiles)
    }

    /// One pass: the nft table, rules and routes first (the killswitch is in place before
    /// any tunnel starts), then the built-in tunnels, then again for the routes to their
    /// new interfaces. Applying is idempotent: with nothing changed, the kernel is only read.
    func applyPolicy() throws {
        defer { steps?.passEnded() }
        try steps?.prepare(policy)
        try applyHolding(try facts())
        guard steps?.reconcileTunnels() ?? false else { return }
        try applyHolding(try facts())
    }

    /// An apply, and at once another if it found cgroups whose socket programs the kernel
    /// refused (or lost) that the plan does not hold yet, or holds and need not any more:
    /// holding them is the table's (UnguardedRules).
    private func applyHolding(_ facts: RuntimeFacts) throws {
        try apply(facts)
        guard UnguardedRules.held(applier.unguardedCgroups, policy: policy, parent: facts.cgroupParent) != facts.unguardedCgroups else { return }
        try apply(try self.facts())
    }

    private func apply(_ facts: RuntimeFacts) throws {
        let before = appliedFacts
        appliedFacts = nil
        try applier.apply(plan(facts))
        appliedFacts = facts
        steps?.applied(facts, before: before)
    }

    /// The planner is pure: the same policy and facts (most seconds of a running vpnd) give
    /// the plan made last, which is not made again.
    private func plan(_ facts: RuntimeFacts) -> DesiredState {
        if let last = lastPlan, last.facts == facts, last.policy == policy { return last.state }
        let state = Planner.plan(policy, facts: facts)
        lastPlan = (policy, facts, state)
        return state
    }

    /// Each profile's index in the policy in force: a reload keeps them.
    var indexes: [String: UInt32] { Dictionary(policy.profiles.map { ($0.name, $0.index) }, uniquingKeysWith: { a, _ in a }) }

    /// What a reload of `directory` would apply first, now (`vpnctl plan`): the same load,
    /// facts and planner, nothing applied. The plan shown is the plan applied.
    func preview(from directory: String) throws -> (state: DesiredState, facts: RuntimeFacts) {
        let next = try LoadedPolicy(directory: directory, reader: reader, previous: indexes)
        let facts = try factsSource.facts(for: next.policy, tunnelFiles: next.tunnelFiles)
        return (Planner.plan(next.policy, facts: facts), facts)
    }

    enum ReloadOutcome {
        /// The policy did not load: nothing changed.
        case refused(any Error)
        /// Applying failed: the previous policy is in force again (re-applied).
        case failed(any Error)
        /// The new policy is in force; `previous` was.
        case applied(previous: Policy)
    }

    /// Reads the policy directory and puts what it holds in force.
    func reload(from directory: String, check: (Policy) throws -> Void) -> ReloadOutcome {
        let next: LoadedPolicy
        do {
            next = try LoadedPolicy(directory: directory, reader: reader, previous: indexes, check: check)
        } catch {
            return .refused(error)
        }
        let previous = policy, previousFiles = tunnelFiles
        policy = next.policy
        tunnelFiles = next.tunnelFiles
        do {
            try applyPolicy()
        } catch {
            policy = previous
            tunnelFiles = previousFiles
            try? applyPolicy()
            return .failed(error)
        }
        sources = next.sources
        return .applied(previous: previous)
    }
}

/// How a policy directory becomes its files' texts: vpnd reads it as trusted files (owned by
/// root, not writable by others: PolicyDirectory); the daemon's unit tests read a folder of
/// their own, which is why they need no root.
struct PolicyReader: Sendable {
    let read: @Sendable (String) throws -> [PolicySource]

    static let trusted = PolicyReader { try PolicyDirectory.read($0) }
}

/// A policy read from its directory, with its built-in tunnels' files, checked; not yet in force.
struct LoadedPolicy {
    var policy: Policy
    var sources: [PolicySource]
    var tunnelFiles: [String: TunnelFiles.Loaded]

    /// Throws a PolicyError (with file:line) or `check`'s refusal.
    /// `previous`: each profile's index in the policy in force (or, at start, as the
    /// kernel has it), which it keeps.
    init(directory: String, reader: PolicyReader = .trusted, previous: [String: UInt32] = [:], check: (Policy) throws -> Void = { _ in }) throws {
        sources = try reader.read(directory)
        policy = try Policy.parse(sources, resolver: SystemNameResolver(), previous: previous)
        tunnelFiles = try TunnelFiles.load(policy)
        try check(policy)
    }
}
