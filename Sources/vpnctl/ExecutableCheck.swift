import Policy
import TrustedFiles

/// `vpnctl check` on the files the executable lists name, as this machine has them: a path
/// that names no program is an error at its file:line (the rule would match nothing); a
/// symbolic link is shown with the file it leads to, which is what the rule is about.
enum ExecutableCheck {
    /// Throws the problems as a PolicyError; else the lines that say what links and scripts
    /// mean.
    static func run(_ policy: Policy, inspector: ExecutableInspector = SystemExecutableInspector()) throws -> [String] {
        let problems = ExecutableFiles.diagnose(policy, inspector: inspector)
        guard problems.isEmpty else { throw PolicyError(problems) }
        var notes: [String] = []
        for listing in ExecutableFiles.listings(policy) {
            let file = inspector.inspect(listing.path)
            let script = file.kind == .program(script: true)
            guard file.target != nil || script else { continue }
            notes.append("profile \(listing.profile): \(listing.key) \(ExecutableFile.shown(listing.path, target: file.target))"
                         + (script ? " (a script: matched when it is executed)" : ""))
        }
        return notes
    }
}
