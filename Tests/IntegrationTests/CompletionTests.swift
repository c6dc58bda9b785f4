import Control
import Foundation
import NetTestSupport
import Testing

/// The completions as installed (scripts/install's layout: vpnexec's from scripts/completions,
/// vpnctl's written by the argument parser), driven by each shell's own completion machinery:
/// bash calls the function bash-completion loads, as bash would; zsh runs its completion
/// system in an interactive shell in a pseudo-terminal (zpty) and records what it offers; fish
/// answers `complete -C`. Profile names come from a stand-in vpnd on two sockets, so a
/// completion that forgets the command line's --socket offers the wrong names.
@Suite(.serialized) struct CompletionTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// Answers every request on `path` with these profiles, as vpnd answers `profiles`.
    final class StandInVpnd: @unchecked Sendable {
        let path: String

        init(path: String, profiles: [String], cleanup: Cleanup) throws {
            self.path = path
            unlink(path)
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1))) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, listen(listener, 64) == 0 else { throw TestEnvironmentError("cannot listen on \(path): errno \(errno)") }
            let answer = ControlCoding.encode(ControlResponse(ok: true, profiles: profiles.map {
                ProfileSummary(name: $0, interface: "wg0", state: "up", builtIn: false, killswitch: true)
            }))
            Thread.detachNewThread {
                while true {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else {
                        if errno == EINTR { continue }
                        return
                    }
                    var request: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
                    while !request.contains(UInt8(ascii: "\n")) {
                        let count = read(connection, &buffer, buffer.count)
                        guard count > 0 else { break }
                        request += buffer[..<count]
                    }
                    _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                    close(connection)
                }
            }
            // Shut down, the listener wakes accept() with an error and the thread ends.
            cleanup.add("stop the stand-in vpnd on \(path)") {
                shutdown(listener, Int32(SHUT_RDWR))
                close(listener)
                unlink(path)
            }
        }
    }

    /// The words bash makes of each line (split at blanks and at COMP_WORDBREAKS' "="), the
    /// function the command's completion registered (loaded as bash-completion loads it on
    /// first use), called as bash calls it; "== LINE" and then the replies.
    static let bashHarness = #"""
        source /usr/share/bash-completion/bash_completion
        # Outside a real completion bash refuses compopt; what it sets does not matter here.
        compopt() { :; }
        for line in "$@"; do
            words=()
            read -ra parts <<< "$line"
            for part in "${parts[@]}"; do
                while [[ $part == *=* ]]; do
                    [[ -n ${part%%=*} ]] && words+=("${part%%=*}")
                    words+=("=")
                    part=${part#*=}
                done
                [[ -n $part ]] && words+=("$part")
            done
            [[ $line == *" " ]] && words+=("")
            COMP_WORDS=("${words[@]}") COMP_CWORD=$((${#words[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line} COMPREPLY=()
            __load_completion "${COMP_WORDS[0]}"
            spec=$(complete -p "${COMP_WORDS[0]}")
            function=${spec#*-F }
            "${function%% *}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '== %s\n' "$line"
            if ((${#COMPREPLY[@]})); then printf '%s\n' "${COMPREPLY[@]}"; fi
        done
        """#

    /// An interactive zsh in a pseudo-terminal types each line and TAB, bound to complete-word
    /// and then a message that says it is done (nothing is typed ahead: zsh's completion
    /// behaves differently with keys pending); a compadd wrapper appends what the completion
    /// system offers to $CAPTURE as it would be inserted ($IPREFIX, the part of the word
    /// already taken: after "-p" it would make "-pwork").
    static let zshHarness = #"""
        zmodload zsh/zpty
        zpty z zsh -f -i
        zpty -w z "PS1='' PS2='' fpath=(\$COMPLETIONS \$fpath); autoload -Uz compinit; compinit -u -D"
        zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a m; builtin compadd -O m "$@"; (( $#m )) && print -rl -- ${m/#/$IPREFIX} >> $CAPTURE; builtin compadd "$@"; }'
        zpty -w z 'typeset -i completed=0; complete-then-say() { zle complete-word; zle -M "COMPLETED$((++completed))."; }; zle -N complete-then-say'
        zpty -w z "zstyle ':completion:*' menu no; unsetopt beep; bindkey '^I' complete-then-say; print RE''ADY"
        zpty -r z out '*READY*'
        local line n=0
        for line in "$@"; do
            ((n++))
            print -r -- "== $line" >> $CAPTURE
            zpty -n -w z "$line"$'\t'
            zpty -r z out "*COMPLETED$n.*"
            zpty -n -w z $'\C-u'
        done
        zpty -d z
        """#

    /// What each line completes to, per line, descriptions dropped.
    static func parse(_ output: String) -> [String: [String]] {
        var answers: [String: [String]] = [:], line: String?
        for row in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if row.hasPrefix("== ") {
                line = String(row.dropFirst(3))
                answers[line!] = []
            } else if let line, !row.isEmpty {
                answers[line, default: []].append(String(row.split(separator: "\t", maxSplits: 1).first ?? ""))
            }
        }
        return answers
    }

    @Test func bashZshAndFishCompleteProfilesFromTheSocketGivenAndTheCommandAfterThem() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let root = NSTemporaryDirectory() + "vx-\(uniqueTag())-completion"
        for directory in ["bin", "home", "zsh", "share/bash-completion/completions", "share/fish/vendor_completions.d"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        cleanup.add("remove \(root)") { try? FileManager.default.removeItem(atPath: root) }
        let usual = try StandInVpnd(path: root + "/vpnd.sock", profiles: ["work", "home"], cleanup: cleanup)
        let other = try StandInVpnd(path: root + "/other.sock", profiles: ["otherprof"], cleanup: cleanup)

        // Installed as scripts/install installs them.
        let vpnctl = try Binaries.path("vpnctl")
        for name in ["vpnexec", "vpnctl"] {
            try FileManager.default.createSymbolicLink(atPath: "\(root)/bin/\(name)", withDestinationPath: try Binaries.path(name))
        }
        let scripts = Self.repository + "/scripts/completions/"
        try FileManager.default.copyItem(atPath: scripts + "vpnexec.bash", toPath: root + "/share/bash-completion/completions/vpnexec")
        try FileManager.default.copyItem(atPath: scripts + "_vpnexec", toPath: root + "/zsh/_vpnexec")
        try FileManager.default.copyItem(atPath: scripts + "vpnexec.fish", toPath: root + "/share/fish/vendor_completions.d/vpnexec.fish")
        try Command.run([vpnctl, "--generate-completion-script", "bash"]).write(toFile: root + "/share/bash-completion/completions/vpnctl", atomically: true, encoding: .utf8)
        try Command.run([vpnctl, "--generate-completion-script", "zsh"]).write(toFile: root + "/zsh/_vpnctl", atomically: true, encoding: .utf8)
        try Self.bashHarness.write(toFile: root + "/harness.bash", atomically: true, encoding: .utf8)
        try Self.zshHarness.write(toFile: root + "/harness.zsh", atomically: true, encoding: .utf8)
        let environment = ["HOME": root + "/home", "PATH": root + "/bin:/usr/bin:/bin", "VPNEXEC_SOCKET": usual.path, "LC_ALL": "C.UTF-8",
                           "XDG_DATA_DIRS": root + "/share:/usr/share", "COMPLETIONS": root + "/zsh", "CAPTURE": root + "/zsh.out"]

        let elsewhere = "--socket \(other.path)"
        let lines = ["vpnexec -p ", "vpnexec -p", "vpnexec \(elsewhere) -p ", "vpnexec --socket=\(other.path) --profile=",
                     "vpnexec -p work -- sle", "vpnexec -p work sle", "vpnexec -p work -- ls --colo", "vpnexec -p work -- vpnexec \(elsewhere) -p "]
        let vpnctlLines = ["vpnctl members -p ", "vpnctl members \(elsewhere) -p ", "vpnctl members --socket=\(other.path) -p "]

        let bash = try Command.status(["timeout", "30", "bash", root + "/harness.bash"] + lines + vpnctlLines, environment: environment)
        let zsh = try Command.status(["timeout", "30", "zsh", "-f", root + "/harness.zsh"] + lines + vpnctlLines, environment: environment)
        let zshOffers = (try? String(contentsOfFile: root + "/zsh.out", encoding: .utf8)) ?? ""
        // fish: `complete -C` cannot run vpnctl's generated completions, which ask for the
        // cursor (`commandline -C`, refused outside an interactive line in fish 3.6).
        let fish = try Command.status(["timeout", "30", "fish", "-c", "for line in $argv; echo \"== $line\"; complete -C \"$line\"; end"] + lines,
                                      environment: environment)
        // The shells ran with their own home and wrote nowhere else (a zsh told to dump its
        // completion cache to /dev/null renames a file over it).
        var null = stat()
        #expect(stat("/dev/null", &null) == 0 && null.st_mode & S_IFMT == S_IFCHR, "/dev/null is still the device")
        let shells = [("bash", Self.parse(bash.stdout), bash), ("zsh", Self.parse(zshOffers), zsh), ("fish", Self.parse(fish.stdout), fish)]
        for (shell, offers, result) in shells {
            #expect(result.status == 0, "\(shell): \(result.status) \(result.stderr)")
            func expect(_ line: String, _ check: ([String]) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
                let offered = offers[line]
                #expect(offered.map(check) == true, "\(shell) completes \"\(line)\" with \(offered.map { "\($0)" } ?? "nothing, not run")",
                        sourceLocation: sourceLocation)
            }
            expect("vpnexec -p ") { Set($0) == ["work", "home"] }
            // The value is the next word: never `-pwork`, which vpnexec does not read.
            expect("vpnexec -p") { $0 == ["-p"] }
            expect("vpnexec \(elsewhere) -p ") { $0 == ["otherprof"] }
            // After "=" bash's readline completes the word after it; zsh and fish the whole word.
            expect("vpnexec --socket=\(other.path) --profile=") { $0 == [shell == "bash" ? "otherprof" : "--profile=otherprof"] }
            // The command after the profile, with "--" or without, and its own options.
            for line in ["vpnexec -p work -- sle", "vpnexec -p work sle"] {
                expect(line) { $0.contains("sleep") && !$0.contains("work") && !$0.contains("home") }
            }
            expect("vpnexec -p work -- ls --colo") { $0.contains("--color") }
            expect("vpnexec -p work -- vpnexec \(elsewhere) -p ") { $0 == ["otherprof"] }
            guard shell != "fish" else { continue }
            expect("vpnctl members -p ") { Set($0) == ["work", "home"] }
            expect("vpnctl members \(elsewhere) -p ") { $0 == ["otherprof"] }
            expect("vpnctl members --socket=\(other.path) -p ") { $0 == ["otherprof"] }
        }
    }
}
