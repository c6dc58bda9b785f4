import ArgumentParser
import Control
import Launch

/// Shell completion of profile names: the profiles the caller may use, as vpnd says (the
/// generated scripts run `vpnctl` itself to complete; vpnexec's call `vpnctl profiles
/// --names`). Nothing when vpnd does not answer: a completion never prints errors.
enum ProfileNames {
    static let completion = CompletionKind.custom { words, _, _ in names(socket: socketOption(in: words)) }

    static func names(socket: String?) -> [String] {
        let path = ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current)
        return ((try? ControlClient.send(.profiles, socketPath: path))?.profiles ?? []).map(\.name)
    }

    /// A --socket the command line being completed gives, so that its names are the ones
    /// that vpnd would answer. bash hands `--socket=PATH` over as three words, `--socket`,
    /// `=` and `PATH` (it splits words at COMP_WORDBREAKS); zsh and fish as one.
    static func socketOption(in words: [String]) -> String? {
        for (index, word) in words.enumerated() {
            if word.hasPrefix("--socket=") { return String(word.dropFirst("--socket=".count)) }
            guard word == "--socket", index + 1 < words.count else { continue }
            if words[index + 1] == "=" { return index + 2 < words.count ? words[index + 2] : nil }
            return words[index + 1]
        }
        return nil
    }
}
