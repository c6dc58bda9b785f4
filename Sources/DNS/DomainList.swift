import DomainNames

/// Which of a profile's domain lists (bypass, route-via-VPN) a name falls in, for tens of
/// thousands of patterns: a trie of labels read from the right (example, then corp.example,
/// then www.corp.example), its edges kept in one open-addressing hash table keyed by
/// (parent node, label). A lookup walks the name's labels from the right and stops at the
/// first suffix no pattern has, so it costs at most one hash lookup per label (one or two
/// for a name in no list) and allocates nothing. A node's label is compared byte for byte,
/// so a hash collision cannot make a match. Two lists may both match one name
/// (`bank.example` and `*.example`): the answer is the set of lists, and which one wins is
/// the ruleset's business, not the matcher's.
public struct DomainList: Sendable {
    /// A set of list indices (the order the lists were given in).
    public struct Membership: OptionSet, Hashable, Sendable {
        public var rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public static func list(_ index: Int) -> Membership { Membership(rawValue: 1 << UInt64(index)) }
        public func contains(list index: Int) -> Bool { contains(.list(index)) }
        /// The indices, lowest first.
        public var lists: [Int] {
            var result: [Int] = [], bits = rawValue
            while bits != 0 {
                result.append(bits.trailingZeroBitCount)
                bits &= bits - 1
            }
            return result
        }
    }

    public static let maxLists = 64

    private struct Node {
        var parent: Int32
        /// The node's label, lower case, in `labels`.
        var labelStart: Int32
        var labelLength: UInt8
        var exactly: Membership = []
        var below: Membership = []
    }

    /// Node 0 is the root (no label).
    private var nodes = [Node(parent: -1, labelStart: 0, labelLength: 0)]
    private var labels: [UInt8] = []
    /// Node indices (or -1), at the slot of their (parent, label) hash; never more than half full.
    private var slots = [Int32](repeating: -1, count: 16)
    private var patternCount = 0
    public let listCount: Int

    /// `lists[i]` holds the patterns of list i; at most `maxLists` lists.
    public init(_ lists: [[DomainPattern]]) {
        precondition(lists.count <= Self.maxLists, "at most \(Self.maxLists) domain lists")
        listCount = lists.count
        for (list, patterns) in lists.enumerated() {
            for pattern in patterns { insert(pattern, into: .list(list)) }
        }
    }

    /// Patterns loaded (a pattern given twice counts twice).
    public var count: Int { patternCount }

    public func lists(matching name: DomainName) -> Membership {
        // A DomainName's wire form has no pointers, so it reads like a message.
        (try? lists(matchingNameAt: 0, in: name.wire)) ?? []
    }

    /// The lists the name at `offset` of a message (compressed or not) falls in.
    func lists(matchingNameAt offset: Int, in bytes: [UInt8]) throws(DNSWireError) -> Membership {
        guard patternCount > 0 else { return [] }
        var cursor = NameCursor(at: offset)
        var result: Membership = []
        _ = try descend(bytes, &cursor, first: true, &result)
        return result
    }

    /// The labels come left to right and the trie goes right to left: each call reads one
    /// label, lets the rest of the name find its node first, then steps down from there. So
    /// the labels are held on the stack, one frame each (at most 127), and nothing is stored.
    /// Returns the label's node, or -1 once a suffix is in no pattern.
    private func descend(_ bytes: [UInt8], _ cursor: inout NameCursor, first: Bool, _ result: inout Membership) throws(DNSWireError) -> Int32 {
        guard let label = try cursor.next(in: bytes) else { return 0 }
        let parent = try descend(bytes, &cursor, first: false, &result)
        guard parent >= 0, let node = find(parent: parent, bytes, start: label.lowerBound) else { return -1 }
        result.formUnion(first ? nodes[Int(node)].exactly : nodes[Int(node)].below)
        return node
    }

    private func find(parent: Int32, _ bytes: [UInt8], start: Int) -> Int32? {
        let length = Int(bytes[start - 1])
        let mask = slots.count - 1
        var slot = Self.hash(parent: parent, bytes, start: start, length: length) & mask
        while true {
            let candidate = slots[slot]
            guard candidate >= 0 else { return nil }
            let node = nodes[Int(candidate)]
            if node.parent == parent, Int(node.labelLength) == length, labelEquals(node, bytes, start: start, length: length) { return candidate }
            slot = (slot + 1) & mask
        }
    }

    private func labelEquals(_ node: Node, _ bytes: [UInt8], start: Int, length: Int) -> Bool {
        let stored = Int(node.labelStart)
        for i in 0..<length where Wire.lower(bytes[start + i]) != labels[stored + i] { return false }
        return true
    }

    private mutating func insert(_ pattern: DomainPattern, into lists: Membership) {
        patternCount += 1
        let wire = pattern.domain.wire
        // The pattern's labels, right to left.
        var starts: [Int] = []
        var at = 0
        while wire[at] != 0 {
            starts.append(at + 1)
            at += 1 + Int(wire[at])
        }
        var node: Int32 = 0
        for start in starts.reversed() {
            node = find(parent: node, wire, start: start) ?? addNode(parent: node, wire, start: start)
        }
        switch pattern.scope {
        case .exactly: nodes[Int(node)].exactly.formUnion(lists)
        case .below: nodes[Int(node)].below.formUnion(lists)
        }
    }

    private mutating func addNode(parent: Int32, _ bytes: [UInt8], start: Int) -> Int32 {
        let length = Int(bytes[start - 1])
        nodes.append(Node(parent: parent, labelStart: Int32(labels.count), labelLength: UInt8(length)))
        labels += bytes[start..<(start + length)].map(Wire.lower)
        let index = Int32(nodes.count - 1)
        if 2 * nodes.count > slots.count {
            slots = [Int32](repeating: -1, count: 2 * slots.count)
            for node in 1..<nodes.count { place(Int32(node)) }
        } else {
            place(index)
        }
        return index
    }

    private mutating func place(_ index: Int32) {
        let node = nodes[Int(index)]
        let mask = slots.count - 1
        var slot = Self.hash(parent: node.parent, labels, start: Int(node.labelStart), length: Int(node.labelLength)) & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = index
    }

    /// FNV-1a over the lower-cased label, then mixed with the parent (murmur3's finaliser), so
    /// that the table's low bits are spread even for labels that differ in one character.
    @inline(__always)
    private static func hash(parent: Int32, _ bytes: [UInt8], start: Int, length: Int) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for i in start..<(start + length) { h = (h ^ UInt64(Wire.lower(bytes[i]))) &* 0x100_0000_01b3 }
        h ^= UInt64(UInt32(bitPattern: parent)) &* 0x9e37_79b9_7f4a_7c15
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return Int(truncatingIfNeeded: h)
    }
}
