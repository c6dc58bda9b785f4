import Plan
import Policy
import TunnelFiles

/// Where the reconciler's facts come from: the machine (MachineFacts, vpnd's), or a test's
/// values.
protocol RuntimeFactsSource: AnyObject {
    /// The facts to plan `policy` with, whose built-in tunnels are `tunnelFiles`.
    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts
}
