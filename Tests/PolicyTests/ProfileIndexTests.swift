import Policy
import Testing

/// A profile's index (its mark and table) follows its name across reloads: a reload that
/// removes or adds another profile moves no one's members' sockets to another mark, and a new
/// profile does not take the mark of one just removed while another is free.
@Suite struct ProfileIndexTests {
    static func policy(_ names: [String], pinned: [String: UInt32] = [:], previous: [String: UInt32] = [:]) throws(PolicyError) -> Policy {
        let text = names.enumerated().map { offset, name in
            "[profile.\(name)]\ntunnel.interface = \"wg\(offset)\"\n" + (pinned[name].map { "mark = \($0)\n" } ?? "")
        }.joined(separator: "\n")
        return try Policy.parse([PolicySource(path: "/p/a.toml", text: text)], resolver: FakeResolver(), previous: previous)
    }

    static func indexes(_ policy: Policy) -> [String: UInt32] {
        Dictionary(uniqueKeysWithValues: policy.profiles.map { ($0.name, $0.index) })
    }

    @Test func indexesFollowTheNames() throws {
        let first = try Self.policy(["a", "b", "c"])
        #expect(Self.indexes(first) == ["a": 1, "b": 2, "c": 3])
        // a goes: b and c keep theirs (file order alone would give them 1 and 2).
        let withoutA = try Self.policy(["b", "c"], previous: Self.indexes(first))
        #expect(Self.indexes(withoutA) == ["b": 2, "c": 3])
        #expect(withoutA.profiles.map(\.mark.value) == [0x0200_0000, 0x0300_0000] && withoutA.profiles.map(\.table) == [7302, 7303])
        // d comes in the same reload that takes a away: not a's index, which a's members'
        // sockets may still carry.
        let aForD = try Self.policy(["b", "c", "d"], previous: Self.indexes(first))
        #expect(Self.indexes(aForD) == ["b": 2, "c": 3, "d": 4])
        // Later, a's index is no profile's: the lowest free one.
        #expect(Self.indexes(try Self.policy(["b", "c", "d"], previous: Self.indexes(withoutA))) == ["b": 2, "c": 3, "d": 1])
        // Renamed: a new name, a new index.
        #expect(Self.indexes(try Self.policy(["a2", "b", "c"], previous: Self.indexes(first))) == ["a2": 4, "b": 2, "c": 3])
    }

    @Test func aPinnedMarkWins() throws {
        let previous = ["b": UInt32(2)]
        let policy = try Self.policy(["x", "b"], pinned: ["x": 0x0200_0000], previous: previous)
        #expect(Self.indexes(policy) == ["x": 2, "b": 1], "x pins 2; b takes the lowest free one")
        // Without a previous policy (vpnctl check, a first start): file order.
        #expect(Self.indexes(try Self.policy(["b", "c"])) == ["b": 1, "c": 2])
    }
}
