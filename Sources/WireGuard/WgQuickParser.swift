import Addresses
import Suggestions

// Reading a wg-quick file into WgQuickConfig: one pass over the lines, a pending section
// at a time, every error with its line and column. A bad line's error is recorded and the
// next line read, so one run names every mistake (as the policy's errors do); what only
// follows from an error already said (a PrivateKey refused, then "[Interface] has no
// PrivateKey") is not said again.

extension WgQuickConfig {
    /// Parses the text of a wg-quick file. Keys are case-insensitive as in wg-quick; every
    /// error names the line, and all of them are thrown together, in line order. Shell hooks
    /// (PreUp, PostUp, ...) are refused rather than skipped: a file that relies on them to be
    /// safe would silently not be.
    public static func parse(_ text: String, file: String) throws(WgQuickConfigErrors) -> WgQuickConfig {
        var parser = Parser(file: file)
        // Split on the scalar, not the Character: "\r\n" is one Character, so a file with
        // CRLF line ends would otherwise be one long line. The "\r" left at each line's
        // end is trimmed as white space, as wg-quick does.
        for (offset, raw) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            do {
                try parser.consume(line: Substring(raw), number: offset + 1)
            } catch {
                parser.errors.append(error)
            }
        }
        return try parser.finish()
    }

    private struct PendingInterface {
        var line: Int
        var privateKey: PrivateKey?
        var listenPort: UInt16?
        var fwmark: UInt32?
        var addresses: [IPPrefix] = []
        var dnsServers: [IPAddress] = []
        var dnsSearch: [String] = []
        var mtu: UInt32?
        var table: RouteTable = .auto
        var saveConfig = false
        var keyLines: [String: Int] = [:]
        /// Keys written (lower-case), and those a misspelt key was nearest to: one of them
        /// is not missing, its own line's error says what is wrong.
        var written: Set<String> = []
    }

    private struct PendingPeer {
        var line: Int
        var publicKey: PublicKey?
        var presharedKey: PresharedKey?
        var endpoints: [EndpointSpec] = []
        /// The line of the second Endpoint, for the error when the file has several peers.
        var secondEndpointLine: Int?
        var allowedIPs: [IPPrefix] = []
        var persistentKeepalive: UInt16?
        /// As PendingInterface's.
        var written: Set<String> = []
    }

    /// `skipped`: an unknown section, or a second [Interface]; its header's error says why,
    /// and its lines are not read (their errors would only follow from that one).
    private enum Section { case none, interface, peer, skipped }

    private struct Parser {
        let file: String
        var section = Section.none
        var interface: PendingInterface?
        var peers: [PendingPeer] = []
        var seen: Set<String> = []
        var errors: [WgQuickConfigError] = []
        /// A key before any section was said once; the lines after it would say the same.
        var strayReported = false
        /// An unknown section was said: the missing [Interface] may be it, misspelt.
        var unknownSection = false

        init(file: String) { self.file = file }

        /// Where the current line's key and value start, for the errors about them.
        var keyColumn = 1
        var valueColumn = 1

        func error(_ line: Int, _ message: String) -> WgQuickConfigError {
            WgQuickConfigError(file: file, line: line, column: valueColumn, message: message)
        }

        func keyError(_ line: Int, _ message: String) -> WgQuickConfigError {
            WgQuickConfigError(file: file, line: line, column: keyColumn, message: message)
        }

        mutating func consume(line raw: Substring, number: Int) throws(WgQuickConfigError) {
            var text = raw
            if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
            let line = text.trimmedForConfig()
            if line.isEmpty { return }
            func column(_ index: Substring.Index) -> Int { raw.distance(from: raw.startIndex, to: index) + 1 }
            keyColumn = column(line.startIndex)
            valueColumn = keyColumn
            if line.hasPrefix("[") {
                seen = []
                switch line.lowercased() {
                case "[interface]":
                    guard interface == nil else {
                        section = .skipped
                        throw keyError(number, "a second [Interface] section; a file describes one interface")
                    }
                    interface = PendingInterface(line: number)
                    section = .interface
                case "[peer]":
                    peers.append(PendingPeer(line: number))
                    section = .peer
                default:
                    section = .skipped
                    unknownSection = true
                    throw keyError(number, "unknown section \(Redaction.quoted(line)); expected [Interface] or [Peer]")
                }
                return
            }
            guard section != .skipped else { return }
            guard let equals = line.firstIndex(of: "=") else {
                throw keyError(number, "expected Key = Value; this line has no '=' (its text is not shown: it may be a key)")
            }
            let key = line[..<equals].trimmedForConfig()
            let value = line[line.index(after: equals)...].trimmedForConfig()
            valueColumn = value.isEmpty ? column(line.index(after: equals)) : column(value.startIndex)
            let lowered = key.lowercased()
            guard !key.isEmpty else { throw keyError(number, "a line with no key before '='") }
            guard Self.isKeyName(key) else {
                throw keyError(number, "\(Self.keyName(key)) is not a key of wg-quick files (a base64 key pasted on a line of its own?)")
            }
            if section == .none {
                guard !strayReported else { return }
                strayReported = true
                throw keyError(number, "\(key) outside a section; start with [Interface]")
            }
            guard seen.insert(lowered).inserted || Self.repeatable.contains(lowered) else {
                throw keyError(number, "\(key) given twice in one section")
            }
            switch section {
            case .interface:
                interface!.written.insert(lowered)
                try interfaceKey(lowered, key: key, value: value, line: number)
            case .peer:
                peers[peers.count - 1].written.insert(lowered)
                try peerKey(lowered, key: key, value: value, line: number)
            case .none, .skipped:
                return
            }
        }

        /// Key names are words; anything else before an '=' may be a base64 key (they end
        /// in '='), so it is never echoed.
        static func isKeyName(_ key: Substring) -> Bool { Redaction.isWord(key) }

        static func keyName(_ key: Substring) -> String {
            isKeyName(key) ? String(key) : "the text before '=' (not shown: it may be a key)"
        }

        static let repeatable: Set<String> = ["address", "dns", "allowedips", "endpoint"]

        static let interfaceKeys = ["PrivateKey", "ListenPort", "FwMark", "Address", "DNS", "MTU", "Table", "SaveConfig"]
        static let peerKeys = ["PublicKey", "PresharedKey", "Endpoint", "AllowedIPs", "PersistentKeepalive"]

        /// The key a misspelt one was nearest to (case aside, as wg-quick reads keys), as
        /// vpnctl suggests a command; nil when none is near.
        static func meant(_ key: Substring, among known: [String]) -> String? {
            Suggestion.closest(to: key.lowercased(), among: known.map { $0.lowercased() })
                .flatMap { near in known.first { $0.lowercased() == near } }
        }

        /// `unknown key "Adress" in [Interface]; did you mean "Address"?`, else the known
        /// keys listed. The key meant counts as written (see `written`): the caller adds it.
        func unknownKey(_ key: Substring, in section: String, known: [String], line: Int) -> WgQuickConfigError {
            let message = "unknown key \"\(key)\" in \(section)"
            guard let near = Self.meant(key, among: known) else {
                return keyError(line, message + " (known keys: \(known.joined(separator: ", ")))")
            }
            return keyError(line, message + "; did you mean \"\(near)\"?")
        }

        mutating func interfaceKey(_ lowered: String, key: Substring, value: Substring, line: Int) throws(WgQuickConfigError) {
            if interface!.keyLines[lowered] == nil { interface!.keyLines[lowered] = line }
            switch lowered {
            case "privatekey":
                guard let k = PrivateKey(base64: value) else { throw error(line, "PrivateKey is not a base64 key of 32 bytes") }
                interface!.privateKey = k
            case "listenport":
                guard let port = UInt16(value) else { throw error(line, "ListenPort \(Redaction.quoted(value)) is not a port number (0-65535)") }
                interface!.listenPort = port
            case "fwmark":
                guard let mark = Self.parseMark(value) else { throw error(line, "FwMark \(Redaction.quoted(value)) is not a 32-bit number or off") }
                interface!.fwmark = mark == 0 ? nil : mark
            case "address":
                for item in Self.list(value) {
                    guard let prefix = IPPrefix(item) ?? IPAddress(item).flatMap({ IPPrefix(address: $0, length: $0.bitCount) }) else {
                        throw error(line, "Address \(Redaction.quoted(item)) is not an address or address/length")
                    }
                    interface!.addresses.append(prefix)
                }
            case "dns":
                for item in Self.list(value) {
                    if let address = IPAddress(item) { interface!.dnsServers.append(address) } else { interface!.dnsSearch.append(String(item)) }
                }
            case "mtu":
                guard let mtu = UInt32(value), (576...65535).contains(mtu) else {
                    throw error(line, "MTU \(Redaction.quoted(value)) must be a number between 576 and 65535")
                }
                interface!.mtu = mtu
            case "table":
                guard let table = Self.parseTable(value) else {
                    throw error(line, "Table \(Redaction.quoted(value)) must be off, auto, main or a routing table number (1-4294967295)")
                }
                interface!.table = table
            case "saveconfig":
                // wg-quick's read_bool, which matches without regard to case.
                switch value.lowercased() {
                case "true": interface!.saveConfig = true
                case "false": interface!.saveConfig = false
                default: throw error(line, "SaveConfig \(Redaction.quoted(value)) is neither true nor false")
                }
            case "preup", "postup", "predown", "postdown":
                throw keyError(line, "\(key) runs a shell command; vpnexec never runs shell hooks — remove it and express the effect in the policy")
            default:
                if let near = Self.meant(key, among: Self.interfaceKeys) { interface!.written.insert(near.lowercased()) }
                throw unknownKey(key, in: "[Interface]", known: Self.interfaceKeys, line: line)
            }
        }

        mutating func peerKey(_ lowered: String, key: Substring, value: Substring, line: Int) throws(WgQuickConfigError) {
            let index = peers.count - 1
            switch lowered {
            case "publickey":
                guard let k = PublicKey(base64: value) else { throw error(line, "PublicKey is not a base64 key of 32 bytes") }
                peers[index].publicKey = k
            case "presharedkey":
                guard let k = PresharedKey(base64: value) else { throw error(line, "PresharedKey is not a base64 key of 32 bytes") }
                peers[index].presharedKey = k
            case "endpoint":
                let items = Self.list(value)
                guard !items.isEmpty else { throw error(line, "Endpoint is empty; give host:port (IPv6 as [address]:port)") }
                for item in items {
                    guard let endpoint = EndpointSpec(item) else {
                        throw error(line, "Endpoint \(Redaction.quoted(item)) is not host:port (IPv6 as [address]:port)")
                    }
                    guard !peers[index].endpoints.contains(endpoint) else { throw error(line, "Endpoint \(endpoint) is listed twice for this peer") }
                    peers[index].endpoints.append(endpoint)
                    if peers[index].endpoints.count == 2 { peers[index].secondEndpointLine = line }
                }
            case "allowedips":
                for item in Self.list(value) {
                    guard let prefix = IPPrefix(item) ?? IPAddress(item).flatMap({ IPPrefix(address: $0, length: $0.bitCount) }) else {
                        throw error(line, "AllowedIPs entry \(Redaction.quoted(item)) is not an address/length")
                    }
                    peers[index].allowedIPs.append(prefix.network)
                }
            case "persistentkeepalive":
                if value.lowercased() == "off" {
                    peers[index].persistentKeepalive = nil
                } else {
                    guard let seconds = UInt16(value) else {
                        throw error(line, "PersistentKeepalive \(Redaction.quoted(value)) must be seconds (1-65535) or off")
                    }
                    peers[index].persistentKeepalive = seconds == 0 ? nil : seconds
                }
            case "preup", "postup", "predown", "postdown":
                throw keyError(line, "\(key) runs a shell command; vpnexec never runs shell hooks — remove it and express the effect in the policy")
            default:
                if let near = Self.meant(key, among: Self.peerKeys) { peers[index].written.insert(near.lowercased()) }
                throw unknownKey(key, in: "[Peer]", known: Self.peerKeys, line: line)
            }
        }

        /// The file's sections as a whole; every error of the file, in line order, if any.
        func finish() throws(WgQuickConfigErrors) -> WgQuickConfig {
            var errors = self.errors
            // These are about whole sections: they point at the section's header line.
            func sectionError(_ line: Int, _ message: String) {
                errors.append(WgQuickConfigError(file: file, line: line, message: message))
            }
            if let interface {
                if interface.privateKey == nil && !interface.written.contains("privatekey") {
                    sectionError(interface.line, "[Interface] has no PrivateKey")
                }
            } else if !strayReported && !unknownSection {
                sectionError(1, "no [Interface] section")
            }
            var done: [Peer] = []
            var keys: [PublicKey: Int] = [:]
            var owners: [IPPrefix: Int] = [:]
            for peer in peers {
                if let second = peer.secondEndpointLine, peers.count > 1 {
                    errors.append(WgQuickConfigError(file: file, line: second, message: "several Endpoints (servers of one key to choose from) need a file with one [Peer]; this one has \(peers.count)"))
                }
                for prefix in peer.allowedIPs {
                    if let first = owners[prefix] {
                        sectionError(peer.line, "AllowedIPs \(prefix) is already the peer's at line \(first); a prefix routes to one peer")
                    } else {
                        owners[prefix] = peer.line
                    }
                }
                guard let publicKey = peer.publicKey else {
                    if !peer.written.contains("publickey") { sectionError(peer.line, "[Peer] has no PublicKey") }
                    continue
                }
                if let first = keys[publicKey] {
                    sectionError(peer.line, "the peer \(publicKey) is already described at line \(first)")
                    continue
                }
                keys[publicKey] = peer.line
                if publicKey == interface?.privateKey?.publicKey {
                    sectionError(peer.line, "a peer cannot have the interface's own public key")
                    continue
                }
                done.append(Peer(publicKey: publicKey, presharedKey: peer.presharedKey, endpoint: peer.endpoints.first,
                                 endpoints: peer.endpoints, allowedIPs: peer.allowedIPs, persistentKeepalive: peer.persistentKeepalive, line: peer.line))
            }
            // An error is recorded for every way there can be no interface or key (above,
            // or at the line that was refused), so a file refused here always says why.
            guard errors.isEmpty, let interface, let privateKey = interface.privateKey else {
                throw WgQuickConfigErrors(errors.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(\.element))
            }
            return WgQuickConfig(
                file: file,
                interface: Interface(privateKey: privateKey, listenPort: interface.listenPort, fwmark: interface.fwmark,
                                     addresses: interface.addresses, dnsServers: interface.dnsServers, dnsSearch: interface.dnsSearch,
                                     mtu: interface.mtu, table: interface.table, saveConfig: interface.saveConfig,
                                     keyLines: interface.keyLines, line: interface.line),
                peers: done)
        }

        static func list(_ value: Substring) -> [Substring] {
            value.split(separator: ",").map { $0.trimmedForConfig() }.filter { !$0.isEmpty }
        }

        /// Numbers, and `main` (254): the one table name every system has; other names would
        /// need /etc/iproute2/rt_tables, which a pure parser does not read.
        static func parseTable(_ value: Substring) -> RouteTable? {
            switch value.lowercased() {
            case "off": return .off
            case "auto", "": return .auto
            case "main": return .number(254)
            default: return UInt32(value).flatMap { $0 == 0 ? nil : .number($0) }
            }
        }

        static func parseMark(_ value: Substring) -> UInt32? {
            if value.lowercased() == "off" { return 0 }
            if value.lowercased().hasPrefix("0x") { return UInt32(value.dropFirst(2), radix: 16) }
            return UInt32(value)
        }
    }
}

extension Substring {
    func trimmedForConfig() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return s
    }
}
