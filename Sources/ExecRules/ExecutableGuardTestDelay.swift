import Glibc
import ServiceSupport

/// TEST ONLY: `VPND_TEST_EXEC_ANSWER_DELAY_MS=N` in vpnd's environment makes its exec guard
/// wait N milliseconds before it decides each exec of a listed program, as a stuck vpnd
/// would, so that a test can watch the deadline answer it (ExecutableGuard.answerDeadline).
/// Read once at start; never set it on a real system: listed programs would start late or,
/// for route.executables, not at all.
enum ExecutableGuardTestDelay {
    static let variable = "VPND_TEST_EXEC_ANSWER_DELAY_MS"

    static func delay(log: Log) -> Swift.Duration {
        guard let text = getenv(variable).map({ String(cString: $0) }), let milliseconds = Int64(text), milliseconds > 0 else { return .zero }
        log.warning("\(variable)=\(text): exec answers are delayed on purpose (test only)")
        return .milliseconds(milliseconds)
    }
}
