import Addresses

/// `vpnctl explain --probe`: what vpnctl gives its child (the target) and reads back from it
/// (one line), as plain text across vpnexec. Pure.
extension ExplainedProbe {
    /// "ADDRESS:PORT" or "[IPv6]:PORT"; nil for anything else (a name: the probe resolves none).
    public static func target(_ text: String) -> Endpoint? {
        let host: Substring, port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") {
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            return nil
        }
        guard let address = IPAddress(host), let number = UInt16(port), number > 0 else { return nil }
        return Endpoint(address: address, port: number)
    }

    /// The probe's child's output read: its last line ("local ADDRESS connected", "local
    /// ADDRESS failed: WHY", "error: WHY"), its address compared with the tunnel's
    /// ("10.99.1.2/32").
    public func reading(_ output: String, tunnelAddresses: [String]) -> ExplainedProbe {
        var probe = self
        let line = output.split(separator: "\n").last(where: { $0.hasPrefix("local ") || $0.hasPrefix("error: ") }).map(String.init) ?? ""
        guard line.hasPrefix("local ") else {
            probe.error = line.isEmpty ? "the probe printed nothing (vpnexec refused? see above)" : String(line.dropFirst("error: ".count))
            return probe
        }
        let words = line.dropFirst("local ".count).split(separator: " ", maxSplits: 1)
        guard let first = words.first, let address = IPAddress(first) else {
            probe.error = "the probe said \"\(line)\""
            return probe
        }
        probe.localAddress = address.description
        let rest = words.count > 1 ? String(words[1]) : ""
        probe.connected = rest == "connected"
        if rest.hasPrefix("failed: ") { probe.error = String(rest.dropFirst("failed: ".count)) }
        probe.tunnelAddress = tunnelAddresses.contains { $0.split(separator: "/").first.flatMap { IPAddress($0) } == address }
        return probe
    }
}
