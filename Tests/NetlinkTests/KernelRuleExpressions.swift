import CNetlink
import Glibc
@testable import Netlink

/// The rules of a table as the kernel holds them: by chain, each rule's expressions as the
/// raw attributes the kernel dumps (every length and value as encoded). `nft list` prints
/// what it decodes from these and can hide a difference (a 4-byte mask on a 1-byte load
/// prints like a 1-byte one), so two encodings of one rule are compared here.
enum KernelRuleExpressions {
    /// Chain name -> its rules' expression attributes, in the chain's order.
    static func list(table: String) throws -> [String: [[UInt8]]] {
        let socket = try NetlinkSocket(bus: NETLINK_NETFILTER)
        let message = NetlinkMessage(type: UInt16(NFNL_SUBSYS_NFTABLES << 8) | UInt16(NFT_MSG_GETRULE.rawValue), flags: 0)
        message.putFamilyHeader(nfgenmsg(nfgen_family: UInt8(NFPROTO_INET), version: UInt8(NFNETLINK_V0), res_id: 0))
        message.put(UInt16(NFTA_RULE_TABLE.rawValue), string: table)
        var chains: [String: [[UInt8]]] = [:]
        for reply in try socket.dump(message, operation: "list rules of \(table)") {
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<nfgenmsg>.size)
            let chain = String(decoding: (attributes.values[UInt16(NFTA_RULE_CHAIN.rawValue)] ?? []).prefix { $0 != 0 }, as: UTF8.self)
            chains[chain, default: []].append(attributes.values[UInt16(NFTA_RULE_EXPRESSIONS.rawValue)] ?? [])
        }
        return chains
    }

    /// Where two listings differ: "chain #index" for each rule that is not the same (or is
    /// only in one), for a failure message that says which rule to look at.
    static func differences(_ a: [String: [[UInt8]]], _ b: [String: [[UInt8]]]) -> [String] {
        Set(a.keys).union(b.keys).sorted().flatMap { chain -> [String] in
            let (x, y) = (a[chain] ?? [], b[chain] ?? [])
            return (0..<max(x.count, y.count)).compactMap { index in
                index < x.count && index < y.count && x[index] == y[index] ? nil : "\(chain) #\(index)"
            }
        }
    }
}
