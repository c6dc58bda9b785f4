import Control

extension StatusText {
    /// How the executable lists are enforced, and each listed path as vpnd found it.
    static func executableRules(_ rules: ExecutableRulesStatus) -> [String] {
        var lines: [String]
        switch rules.enforcement {
        case ExecutableRulesStatus.beforeExec:
            lines = ["exec rules: listed programs are placed before they run (fanotify), "
                     + (rules.execEventsUnavailable.map { "without exec events as a backstop (\($0)): processes already running a listed program are not placed" }
                        ?? "exec events as a backstop"),
                     "  an exec waits for vpnd at most \(rules.answerDeadlineMilliseconds) ms, then route.executables are refused and bypass.executables run where they were started: \(rules.refusedAtDeadline) refused, \(rules.allowedAtDeadline) allowed so far"
                     + (rules.unplaced > 0 ? "; \(rules.unplaced) answered unplaced (the move failed)" : "")]
        case ExecutableRulesStatus.afterExec:
            lines = ["exec rules: listed programs are moved after their exec (exec events): until then they run where they were started"
                     + (rules.fanotifyUnavailable.map { "; fanotify permission events unavailable: \($0)" } ?? "")]
        default:
            lines = ["exec rules: NOT enforced (\(rules.fanotifyUnavailable ?? "?"); \(rules.execEventsUnavailable ?? "?"))"]
        }
        for file in rules.files {
            let state: String
            if let problem = file.problem {
                state = problem
            } else if file.script {
                state = file.marked ? "marked (a script)" : "a script: matched only with fanotify"
            } else {
                state = file.marked ? "marked" : "followed by exec events"
            }
            lines.append("  \(file.shown): \(state)")
        }
        return lines
    }
}
