/// Undo actions run in reverse order, also when a test fails half-way.
public final class Cleanup: @unchecked Sendable {
    private var actions: [(String, () throws -> Void)] = []

    public init() {}

    public func add(_ what: String, _ action: @escaping () throws -> Void) {
        actions.append((what, action))
    }

    /// Runs every action even if some fail; reports the failures.
    public func run() {
        while let (what, action) = actions.popLast() {
            do { try action() } catch { print("cleanup: \(what) failed: \(error)") }
        }
    }

    deinit { run() }
}
