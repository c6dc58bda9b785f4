/// A span of time as a policy writes it: a number and a unit ("500ms", "10s", "10m",
/// "1h"). A bare number is refused: "10" could mean seconds or minutes, and a policy read
/// wrongly keeps a tunnel up (or takes it down) for the wrong reason.
public struct Duration: Hashable, Sendable, CustomStringConvertible {
    public var milliseconds: UInt64

    public init(milliseconds: UInt64) { self.milliseconds = milliseconds }

    public static func seconds(_ s: UInt64) -> Duration { Duration(milliseconds: s * 1000) }

    public var seconds: Double { Double(milliseconds) / 1000 }

    /// Parses "500ms", "10s", "10m", "1h", "1d"; nil for anything else (no bare numbers,
    /// no fractions, no combinations, nothing past a year).
    public init?(parsing text: String) {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let unit = text.dropFirst(digits.count)
        guard !digits.isEmpty, digits.count <= 12, let value = UInt64(digits) else { return nil }
        let scale: UInt64
        switch unit {
        case "ms": scale = 1
        case "s": scale = 1000
        case "m": scale = 60_000
        case "h": scale = 3_600_000
        case "d": scale = 86_400_000
        default: return nil
        }
        let (total, overflow) = value.multipliedReportingOverflow(by: scale)
        guard !overflow, total <= 366 * 86_400_000 else { return nil }
        milliseconds = total
    }

    /// The largest unit that divides it ("90s", "10m", "1500ms").
    public var description: String {
        for (unit, scale) in [("d", 86_400_000 as UInt64), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= scale && milliseconds % scale == 0 {
            return "\(milliseconds / scale)\(unit)"
        }
        return "\(milliseconds)ms"
    }
}
