import Addresses
import DomainNames
import TOML

/// Collects the diagnostics of a whole policy so that an admin sees every mistake at once.
final class DiagnosticLog {
    private(set) var diagnostics: [PolicyDiagnostic] = []

    func error(_ message: String, at location: SourceLocation?) {
        diagnostics.append(PolicyDiagnostic(message, at: location))
    }
}

/// Reads one TOML table of the policy: typed getters that report a wrong type at the
/// value's position, and a final check that names every key nobody asked for, then the
/// keys the table needs and lacks.
struct TableReader {
    let table: TOMLTable
    let file: String
    /// How the table is named in messages ("[profile.work]").
    let context: String
    let log: DiagnosticLog
    private var known: Set<String> = []
    private var absent: [(keys: [String], message: String, location: SourceLocation?)] = []

    init(_ table: TOMLTable, file: String, context: String, log: DiagnosticLog) {
        self.table = table
        self.file = file
        self.context = context
        self.log = log
    }

    func location(_ position: SourcePosition) -> SourceLocation { SourceLocation(file: file, position) }

    var location: SourceLocation { location(table.position) }

    func keyLocation(_ key: String) -> SourceLocation? {
        table.entries.first { $0.key == key }.map { location($0.keyPosition) }
    }

    mutating func value(_ key: String) -> TOMLValue? {
        known.insert(key)
        return table[key]
    }

    mutating func string(_ key: String) -> (String, SourceLocation)? {
        guard let value = value(key) else { return nil }
        guard case let .string(text) = value.kind else {
            return typeError(key, value, expected: "a string")
        }
        return (text, location(value.position))
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case let .boolean(flag) = value.kind else {
            return typeError(key, value, expected: "true or false")
        }
        return flag
    }

    mutating func integer(_ key: String) -> (Int64, SourceLocation)? {
        guard let value = value(key) else { return nil }
        guard case let .integer(number) = value.kind else {
            return typeError(key, value, expected: "an integer")
        }
        return (number, location(value.position))
    }

    /// An integer that must fit `T` and be `valid`; otherwise "CONTEXT KEY VALUE PROBLEM"
    /// at the value, and nil.
    mutating func integer<T: FixedWidthInteger>(_ key: String, as _: T.Type, where valid: (T) -> Bool = { _ in true },
                                                else problem: String) -> (T, SourceLocation)? {
        guard let (number, at) = integer(key) else { return nil }
        guard let value = T(exactly: number), valid(value) else {
            log.error("\(context) \(key) \(number) \(problem)", at: at)
            return nil
        }
        return (value, at)
    }

    mutating func table(_ key: String) -> TOMLTable? {
        guard let value = value(key) else { return nil }
        guard case let .table(inner) = value.kind else {
            return typeError(key, value, expected: "a table")
        }
        return inner
    }

    /// An array key whose items `read` takes one at a time; an item it refuses is left out.
    mutating func array<Item>(_ key: String, of expected: String, _ read: (ArrayItem) -> Item?) -> [Item]? {
        guard let value = value(key) else { return nil }
        guard case let .array(items) = value.kind else { return typeError(key, value, expected: expected) }
        let itemContext = "\(context) \(key)"
        return items.compactMap { read(ArrayItem(value: $0, location: location($0.position), context: itemContext, log: log)) }
    }

    /// An array whose items are strings or integers ("alice", 1001).
    mutating func namesOrNumbers(_ key: String) -> [(NameOrNumber, SourceLocation)]? {
        array(key, of: "an array of names and numbers") { item in
            switch item.value.kind {
            case let .string(name): return (.name(name), item.location)
            case let .integer(number): return (.number(number), item.location)
            default: return item.refuse("items must be names (strings) or numbers, not \(item.value.kind.typeName)")
            }
        }
    }

    /// An array of networks ("10.20.0.0/16", "fd00:20::/48"; a bare address is one host);
    /// host bits must be clear.
    mutating func prefixes(_ key: String) -> [(IPPrefix, SourceLocation)]? {
        array(key, of: "an array of networks such as \"10.20.0.0/16\"") { item in
            guard let text = item.string("networks as strings (\"10.20.0.0/16\")") else { return nil }
            guard let prefix = IPPrefix(text) else {
                return item.refuse("\"\(text)\" is not a network (address/length, e.g. \"10.20.0.0/16\" or \"fd00:20::/48\")")
            }
            guard prefix.network == prefix else { return item.refuse("\"\(text)\" has host bits set; did you mean \"\(prefix.network)\"?") }
            // Everything, anyone's: the tunnel daemon's own packets and the host's link
            // protocols (DHCP, neighbour discovery) too, which system mode exempts and this would not.
            guard prefix.length > 0 else {
                return item.refuse("\"\(text)\" is every address; to send the whole host through a profile use [system] profile = \"NAME\" (system mode)")
            }
            return (prefix, item.location)
        }
    }

    /// An array of domain names and wildcards ("bank.example", "*.corp.example").
    mutating func domains(_ key: String) -> [(DomainPattern, SourceLocation)]? {
        array(key, of: "an array of names such as \"bank.example\" or \"*.corp.example\"") { item in
            guard let text = item.string("names as strings") else { return nil }
            do {
                return (try DomainPattern(text), item.location)
            } catch {
                return item.refuse("\(error)")
            }
        }
    }

    /// An array of IP addresses ("10.64.0.1", "fd00::53").
    mutating func addresses(_ key: String) -> [IPAddress]? {
        array(key, of: "an array of addresses such as \"10.64.0.1\"") { item in
            guard case let .string(text) = item.value.kind, let address = IPAddress(text) else {
                return item.refuse("items must be IP addresses as strings (\"10.64.0.1\", \"fd00::53\")")
            }
            return address
        }
    }

    /// An array of interface names as the kernel takes them (1 to 15 bytes, no '/', ':' or
    /// white space, not "." or ".."), not `lo`.
    mutating func interfaceNames(_ key: String) -> [(String, SourceLocation)]? {
        array(key, of: "an array of interface names such as \"virbr1\"") { item in
            guard let name = item.string("interface names as strings (\"virbr1\")") else { return nil }
            guard (1...15).contains(name.utf8.count), name != ".", name != "..",
                  !name.unicodeScalars.contains(where: { $0 == "/" || $0 == ":" || $0.properties.isWhitespace || $0.value < 0x21 }) else {
                return item.refuse("\"\(name)\" cannot be an interface name (1 to 15 characters, no '/', ':' or spaces)")
            }
            guard name != "lo" else { return item.refuse("\"lo\" is loopback: what arrives there is this host's own") }
            return (name, item.location)
        }
    }

    /// An array of strings.
    mutating func strings(_ key: String) -> [(String, SourceLocation)]? {
        array(key, of: "an array of strings") { item in item.string("strings").map { ($0, item.location) } }
    }

    /// An array of absolute, normalized paths of executables.
    mutating func executables(_ key: String) -> [(String, SourceLocation)]? {
        array(key, of: "an array of absolute paths such as \"/usr/bin/steam\"") { item in
            guard let path = item.string("paths as strings (\"/usr/bin/steam\")") else { return nil }
            let components = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard path.hasPrefix("/"), path.count <= 4096, !components.isEmpty,
                  components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
                return item.refuse("\"\(path)\" must be an absolute path without '.', '..', '//' or a trailing '/' (the file the program is run from)")
            }
            return (path, item.location)
        }
    }

    private func typeError<T>(_ key: String, _ value: TOMLValue, expected: String) -> T? {
        log.error("\(context) \(key) must be \(expected), not \(value.kind.typeName)", at: location(value.position))
        return nil
    }

    /// The table lacks what one of `keys` would give: `message`, said by
    /// `reportUnknownKeys` after the unknown keys, the causes, and not at all when one of
    /// them is a misspelling of one of `keys`, whose did-you-mean already says the fix
    /// ("tunnel needs `interface`" came before "unknown key "interfce"", the effect first
    /// and as a second problem).
    mutating func missing(_ keys: [String], _ message: String, at location: SourceLocation?) {
        absent.append((keys, message, location))
    }

    /// The key asked for that an unknown one is a near miss of.
    private func suggestion(for key: String) -> String? {
        known.sorted().first { editDistance($0, key) <= 2 }
    }

    /// Reports keys that no getter asked for, with a suggestion for near misses, then what
    /// `missing` recorded that they do not explain.
    func reportUnknownKeys(unsupported: [String: String] = [:]) {
        var meant: Set<String> = []
        for entry in table.entries where !known.contains(entry.key) {
            let at = location(entry.keyPosition)
            if let reason = unsupported[entry.key] {
                log.error((context.isEmpty ? "" : context + " ") + "\(entry.key): \(reason)", at: at)
                continue
            }
            var message = "unknown key \"\(entry.key)\" " + (context.isEmpty ? "at the top level" : "in \(context)")
            if let best = suggestion(for: entry.key) {
                message += "; did you mean \"\(best)\"?"
                meant.insert(best)
            } else if !known.isEmpty {
                message += " (known keys: \(known.sorted().joined(separator: ", ")))"
            }
            log.error(message, at: at)
        }
        for need in absent where need.keys.allSatisfy({ !meant.contains($0) }) {
            log.error(need.message, at: need.location)
        }
    }
}

/// One item of an array key: its value, where it was written, and how to refuse it.
struct ArrayItem {
    let value: TOMLValue
    let location: SourceLocation
    /// How messages about the array's items begin ("[profile.work] route networks").
    let context: String
    let log: DiagnosticLog

    /// Logs "CONTEXT: PROBLEM" at the item, and leaves it out.
    func refuse<T>(_ problem: String) -> T? {
        log.error("\(context): \(problem)", at: location)
        return nil
    }

    /// The item's text, or nil after "items must be WHAT, not TYPE".
    func string(_ what: String) -> String? {
        guard case let .string(text) = value.kind else { return refuse("items must be \(what), not \(value.kind.typeName)") }
        return text
    }
}

enum NameOrNumber: Hashable {
    case name(String)
    case number(Int64)
}

public func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}
