/// A `--test-timing` vpn-server refuses to start with.
enum TestTimingError: Error, CustomStringConvertible {
    /// An item that is not NAME=SECONDS with SECONDS above zero.
    case notNameEqualsSeconds(String)
    case unknownTimer(String)

    static let known = ["rekey-after", "reject-after", "rekey-attempt", "rekey-timeout", "keepalive"]

    var description: String {
        switch self {
        case let .notNameEqualsSeconds(item): "--test-timing: \"\(item)\" is not name=seconds"
        case let .unknownTimer(name): "--test-timing: unknown timer \(name); known: \(Self.known.joined(separator: ", "))"
        }
    }
}
