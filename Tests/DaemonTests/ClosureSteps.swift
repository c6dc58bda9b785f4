@testable import Daemon
import Plan
import Policy

/// The steps around a reconciler's pass as closures, for a test to count or act in.
final class ClosureSteps: PassSteps {
    var onPrepare: (Policy) throws -> Void = { _ in }
    var onReconcileTunnels: () -> Bool = { false }
    var onApplied: (RuntimeFacts, RuntimeFacts?) -> Void = { _, _ in }
    var onPassEnded: () -> Void = {}

    func prepare(_ policy: Policy) throws { try onPrepare(policy) }
    func reconcileTunnels() -> Bool { onReconcileTunnels() }
    func applied(_ facts: RuntimeFacts, before: RuntimeFacts?) { onApplied(facts, before) }
    func passEnded() { onPassEnded() }
}
