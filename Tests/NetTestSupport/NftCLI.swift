import Foundation

/// Reads and writes nftables with the nft CLI, as an independent check of the product.
public enum NftCLI {
    /// `nft -f` of a ruleset naming cgroups by path. The CLI resolves such paths only under
    /// /sys/fs/cgroup, so it runs in a private mount namespace with cgroup2 mounted there.
    public static func apply(_ text: String, in namespace: NetworkNamespace, checkOnly: Bool = false) throws {
        let nft = "nft \(checkOnly ? "-c " : "")-f -"
        try Command.run(["unshare", "-m", "sh", "-c",
                         "mount -t cgroup2 none /sys/fs/cgroup && exec nsenter --net=\(namespace.path) -- \(nft)"],
                        input: text)
    }

    /// The cgroup ids in a verdict map, as the kernel holds them (sorted).
    public static func cgroupKeys(in namespace: NetworkNamespace, set: String, table: String = "vpnexec") throws -> [UInt64] {
        // `nft --debug=netlink` prints element keys as the raw 32-bit words.
        let text = try namespace.run(["nft", "--debug=netlink", "list", "map", "inet", table, set])
        var keys: [UInt64] = []
        for line in text.split(separator: "\n") where line.contains("element ") {
            let words = line.split(whereSeparator: \.isWhitespace).drop { $0 != "element" }.dropFirst().prefix(2)
            guard words.count == 2, let low = UInt32(words.first!, radix: 16), let high = UInt32(words.last!, radix: 16) else { continue }
            keys.append(UInt64(high) << 32 | UInt64(low))
        }
        return keys.sorted()
    }

    /// Each rule's chain and kernel handle, in the kernel's order: equal lists mean no rule
    /// was deleted and added again.
    public static func ruleHandles(in namespace: NetworkNamespace, table: String = "vpnexec") throws -> [String] {
        var chain = ""
        return try namespace.run(["nft", "-a", "list", "table", "inet", table]).split(separator: "\n").compactMap { line in
            if line.hasPrefix("\tchain ") { chain = String(line.split(separator: " ")[1]) }
            guard line.hasPrefix("\t\t"), !line.contains("type "), let handle = line.range(of: "# handle ") else { return nil }
            return chain + " " + line[handle.upperBound...]
        }
    }
}
