import HexDigits

/// Renders a table in `nft -f` syntax. The output is what `vpnctl plan` prints and what
/// tests feed to `nft -c -f`, so it must stay valid input for the nft CLI.
public struct NftTextRenderer: Sendable {
    /// Prefix the table with "create if missing, then delete": `nft -f` of the result replaces
    /// the table in one transaction, like the daemon's own batch.
    public var replacing: Bool

    public init(replacing: Bool = true) {
        self.replacing = replacing
    }

    public func render(_ table: NftTable) -> String {
        var out: [String] = []
        let id = "\(table.family.rawValue) \(table.name)"
        if replacing {
            out.append("table \(id)")
            out.append("delete table \(id)")
        }
        out.append("table \(id) {")
        for counter in table.counters {
            var body: [String] = []
            if let comment = counter.comment { body.append("comment \(quoted(comment))") }
            if counter.packets != 0 || counter.bytes != 0 {
                body.append("packets \(counter.packets) bytes \(counter.bytes)")
            }
            out.append("\tcounter \(counter.name) {" + (body.isEmpty ? " }" : ""))
            if !body.isEmpty {
                out.append(contentsOf: body.map { "\t\t\($0)" })
                out.append("\t}")
            }
        }
        for set in table.sets {
            out.append("\t\(set.isMap ? "map" : "set") \(set.name) {")
            let type = set.key.rawValue + (set.data.map { " : \($0.rawValue)" } ?? "")
            out.append("\t\ttype \(type)")
            let flags = (set.interval ? ["interval"] : []) + (set.timeout ? ["timeout"] : [])
            if !flags.isEmpty { out.append("\t\tflags \(flags.joined(separator: ","))") }
            if let comment = set.comment { out.append("\t\tcomment \(quoted(comment))") }
            if !set.elements.isEmpty {
                let elements = set.elements.map(element).joined(separator: ",\n\t\t\t     ")
                out.append("\t\telements = { \(elements) }")
            }
            out.append("\t}")
        }
        for chain in table.chains {
            out.append("\tchain \(chain.name) {")
            if let base = chain.base {
                out.append("\t\ttype \(base.kind.rawValue) hook \(base.hook.rawValue) priority \(priority(base.priority, hook: base.hook)); policy \(verdict(base.policy));")
            }
            for rule in chain.rules {
                out.append("\t\t" + self.rule(rule))
            }
            out.append("\t}")
        }
        out.append("}")
        return out.joined(separator: "\n") + "\n"
    }

    public func rule(_ rule: NftRule) -> String {
        var words = rule.statements.map(statement)
        if let comment = rule.comment { words.append("comment \(quoted(comment))") }
        return words.joined(separator: " ")
    }

    func statement(_ statement: NftStatement) -> String {
        switch statement {
        case let .markMatch(mask, value, negated):
            return "meta mark & \(hex(mask, digits: 8)) \(negated ? "!=" : "==") \(hex(value, digits: 8))"
        case let .outputInterfaceName(name, negated):
            return "oifname \(negated ? "!= " : "")\(quoted(name))"
        case let .outputInterface(name, _):
            // nft takes the name and stores its index now, as the plan did.
            return "oif \(quoted(name))"
        case let .inputInterfaceName(name, negated):
            return "iifname \(negated ? "!= " : "")\(quoted(name))"
        case let .inputInterface(name, _):
            return "iif \(quoted(name))"
        case let .inputInterfaceVerdictMap(map):
            return "iifname vmap @\(map)"
        case let .outputInterfaceVerdictMap(map):
            return "oifname vmap @\(map)"
        case let .destinationInSet(ipv4, set, negated):
            return "\(ipv4 ? "ip" : "ip6") daddr \(negated ? "!= " : "")@\(set)"
        case let .sourceInSet(ipv4, set, negated):
            return "\(ipv4 ? "ip" : "ip6") saddr \(negated ? "!= " : "")@\(set)"
        case let .sourceVerdictMap(ipv4, map):
            return "\(ipv4 ? "ip" : "ip6") saddr vmap @\(map)"
        case let .sourceAddress(address):
            return "\(address.isIPv4 ? "ip" : "ip6") saddr \(address)"
        case let .sourceNetwork(prefix):
            return "\(prefix.isIPv4 ? "ip" : "ip6") saddr \(prefix)"
        case let .sourcePortVerdictMap(transport, map):
            return "\(transport.rawValue) sport vmap @\(map)"
        case let .namedCounter(name):
            return "counter name \(quoted(name))"
        case let .cgroupVerdictMap(level, map):
            return "socket cgroupv2 level \(level) vmap @\(map)"
        case let .markVerdictMap(mask, map):
            return "meta mark & \(hex(mask, digits: 8)) vmap @\(map)"
        case let .socketMarkMatch(value, negated):
            return "socket mark \(negated ? "!=" : "==") \(hex(value, digits: 8))"
        case let .transportProtocol(number):
            return "meta l4proto \(number)"
        case let .tcpSynWithoutAck(negated):
            return "tcp flags & (syn | ack) \(negated ? "!=" : "==") syn"
        case let .udpPorts(source, destination):
            return "udp sport \(source) udp dport \(destination)"
        case let .sourcePortInSet(transport, set):
            return "\(transport.rawValue) sport @\(set)"
        case let .destinationPortInSet(transport, set):
            return "\(transport.rawValue) dport @\(set)"
        case let .socketUserInSet(set):
            return "meta skuid @\(set)"
        case let .icmpv6Types(types):
            return "icmpv6 type " + (types.count == 1 ? "\(types.lowerBound)" : "\(types.lowerBound)-\(types.upperBound)")
        case let .destinationPort(transport, port):
            return "\(transport.rawValue) dport \(port)"
        case let .setMark(value):
            return "meta mark set \(hex(value, digits: 8))"
        case .masquerade:
            return "masquerade"
        case let .sourceNAT(address):
            return "snat \(address.isIPv4 ? "ip" : "ip6") to \(address)"
        case let .reject(tcpReset):
            return tcpReset ? "reject with tcp reset" : "reject"
        case .rejectNoRoute:
            return "reject with icmpx host-unreachable"
        case let .verdict(v):
            return verdict(v)
        }
    }

    func element(_ element: NftElement) -> String {
        let key = key(element.key) + (element.timeout.map { " timeout \($0)s" } ?? "")
        return element.verdict.map { "\(key) : \(verdict($0))" } ?? key
    }

    func key(_ key: NftElementKey) -> String {
        switch key {
        case let .cgroup(_, path): return quoted(path)
        case let .mark(mark): return hex(mark, digits: 8)
        case let .prefix(prefix):
            return prefix.length == prefix.address.bitCount ? prefix.address.description : prefix.network.description
        case let .port(port): return String(port)
        case let .uid(uid): return String(uid)
        case let .interface(name): return quoted(name)
        }
    }

    func verdict(_ verdict: NftVerdict) -> String {
        switch verdict {
        case .accept: return "accept"
        case .drop: return "drop"
        case .return: return "return"
        case let .jump(chain): return "jump \(chain)"
        case let .goto(chain): return "goto \(chain)"
        }
    }

    /// nft's names where it accepts them (dstnat only in prerouting, srcnat only in
    /// postrouting), else the number.
    func priority(_ value: Int32, hook: NftBaseChain.Hook) -> String {
        switch (value, hook) {
        case (NftBaseChain.mangle, _): return "mangle"
        case (NftBaseChain.filter, _): return "filter"
        case (NftBaseChain.dstnat, .prerouting): return "dstnat"
        case (NftBaseChain.srcnat, .postrouting): return "srcnat"
        default: return String(value)
        }
    }

    /// nft strings cannot contain a double quote or a newline; our names and comments are
    /// generated from validated policy, so anything else is replaced rather than escaped.
    func quoted(_ text: String) -> String {
        let safe = text.map { ($0 == "\"" || $0.isNewline) ? "_" : $0 }
        return "\"" + String(safe) + "\""
    }
}
