import Monotonic
import WireGuard

/// `--test-timing rekey-after=3,reject-after=6,...`: shortened protocol timers so tests can
/// watch rekeys and expiry in seconds. Hidden from --help; never for production.
enum TestTiming {
    static func parse(_ text: String) throws(TestTimingError) -> Timing {
        var timing = Timing.standard
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let seconds = Double(parts[1]), seconds > 0 else {
                throw .notNameEqualsSeconds(String(item))
            }
            let d = MonotonicInstant.Duration.seconds(seconds)
            switch parts[0] {
            case "rekey-after": timing.rekeyAfterTime = d
            case "reject-after": timing.rejectAfterTime = d
            case "rekey-attempt": timing.rekeyAttemptTime = d
            case "rekey-timeout": timing.rekeyTimeout = d
            case "keepalive": timing.keepaliveTimeout = d
            default: throw .unknownTimer(String(parts[0]))
            }
        }
        return timing
    }
}
