import Control

extension StatusText {
    /// The built-in engine's retries: the schedule, then per peer that is retrying (or whose
    /// last try failed) the attempts, the last error and the next try.
    static func reconnect(_ r: ReconnectReport) -> [String] {
        var lines = ["  reconnect \(r.schedule)"]
        for peer in r.peers where peer.attempts > 0 || peer.lastError != nil {
            var text = "  retrying  \(peer.publicKey): \(Plural.count(peer.attempts, "attempt")) since the last handshake"
            if let error = peer.lastErrorText { text += ", last error: \(error)" }
            text += peer.nextTry.map { ", next try in \(Int($0.rounded(.up))) s" } ?? ", no try due (waits for traffic)"
            lines.append(text)
        }
        return lines
    }
}
