@testable import Daemon
import Addresses
import Plan
import Policy
import TunnelFiles
import Applying

/// Facts a test sets, as vpnd's FactsReader would have read them: the cgroups, links and
/// tunnel networks as given, trusted-network verdicts evaluated on `network` (as
/// FactsReader does, for the profiles with rules).
final class FakeFactsSource: RuntimeFactsSource {
    var facts: RuntimeFacts
    var network = NetworkFacts()
    private(set) var reads = 0
    /// What MachineFacts learns from the real applier: the cgroups it found unguarded.
    weak var applier: FakeKernelApplier?

    init(_ facts: RuntimeFacts) { self.facts = facts }

    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
        reads += 1
        var result = facts
        if policy.profiles.contains(where: { !$0.trusted.isEmpty }) { result.trusted = TrustedEvaluator.verdicts(policy, network) }
        if let applier { result.unguardedCgroups = UnguardedRules.held(applier.unguardedCgroups, policy: policy, parent: result.cgroupParent) }
        return result
    }
}
