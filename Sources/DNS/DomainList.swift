/// Which of a profile's domain lists (bypass, route-via-VPN) a name falls in, for tens of
/// thousands of patterns. Each pattern's domain is stored under a hash of its labels read
/// from the right; a name is looked up one suffix at a time, shortest first, so a lookup
/// costs one hash probe per label (never a scan of the patterns) and allocates nothing.
/// A probe that hits is confirmed byte for byte, so a hash collision cannot make a match.
/// Two lists may both match one name (`bank.example` and `*.example`): the answer is the set
/// of lists, and which one wins is the ruleset's business, not the matcher's.
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

    private struct Entry {
        /// The domain in lower-case wire form.
        var domain: [UInt8]
        var labelCount: Int
        var exactly: Membership
        var below: Membership
        /// The next entry with the same hash, or -1.
        var next: Int32
    }

    private var entries: [Entry] = []
    private var index: [UInt64: Int32] = [:]
    /// Suffixes with more labels than this cannot match: lookups stop there.
    private var deepest = 0
    public let listCount: Int

    /// `lists[i]` holds the patterns of list i; at most `maxLists` lists.
    public init(_ lists: [[DomainPattern]]) {
        precondition(lists.count <= Self.maxLists, "at most \(Self.maxLists) domain lists")
        listCount = lists.count
        for (list, patterns) in lists.enumerated() {
            for pattern in patterns { insert(pattern, into: .list(list)) }
        }
    }

    /// Distinct domains stored (a domain in several lists or both scopes counts once).
    public var domainCount: Int { entries.count }

    public func lists(matching name: DomainName) -> Membership {
        // A DomainName's wire form has no pointers, so it reads like a message.
        (try? lists(matchingNameAt: 0, in: name.wire)) ?? []
    }

    /// The lists the name at `offset` of a message (compressed or not) falls in.
    func lists(matchingNameAt offset: Int, in bytes: [UInt8]) throws(DNSWireError) -> Membership {
        guard !entries.isEmpty else { return [] }
        var result: Membership = []
        try Self.forEachSuffix(of: bytes, at: offset, upTo: deepest) { suffix in
            var candidate = index[suffix.hash] ?? -1
            while candidate >= 0 {
                let entry = entries[Int(candidate)]
                if entry.labelCount == suffix.labelCount, suffix.equals(entry.domain) {
                    result.formUnion(suffix.isWholeName ? entry.exactly : entry.below)
                }
                candidate = entry.next
            }
        }
        return result
    }

    private mutating func insert(_ pattern: DomainPattern, into lists: Membership) {
        var hash: UInt64 = 0, labelCount = 0
        try! Self.forEachSuffix(of: pattern.domain.wire, at: 0, upTo: .max) { suffix in
            if suffix.isWholeName { (hash, labelCount) = (suffix.hash, suffix.labelCount) }
        }
        deepest = max(deepest, labelCount)
        var candidate = index[hash] ?? -1
        while candidate >= 0, entries[Int(candidate)].domain != pattern.domain.wire {
            candidate = entries[Int(candidate)].next
        }
        if candidate < 0 {
            entries.append(Entry(domain: pattern.domain.wire, labelCount: labelCount, exactly: [], below: [], next: index[hash] ?? -1))
            candidate = Int32(entries.count - 1)
            index[hash] = candidate
        }
        switch pattern.scope {
        case .exactly: entries[Int(candidate)].exactly.formUnion(lists)
        case .below: entries[Int(candidate)].below.formUnion(lists)
        }
    }

    /// One suffix of a name being looked up: its rightmost `labelCount` labels.
    private struct Suffix {
        let bytes: [UInt8]
        let starts: UnsafeMutableBufferPointer<Int>
        let first: Int
        let total: Int
        let hash: UInt64

        var labelCount: Int { total - first }
        var isWholeName: Bool { first == 0 }

        /// Whether these labels are `domain` (lower-case wire form), ignoring case.
        func equals(_ domain: [UInt8]) -> Bool {
            var at = 0
            for label in first..<total {
                let start = starts[label], length = Int(bytes[start - 1])
                guard at + 1 + length < domain.count, Int(domain[at]) == length else { return false }
                for i in 0..<length where Wire.lower(bytes[start + i]) != domain[at + 1 + i] { return false }
                at += 1 + length
            }
            return at == domain.count - 1
        }
    }

    /// Calls `body` with each suffix of the name at `offset`, shortest first, up to `limit`
    /// labels. The hash of a suffix extends the hash of the one before it (FNV-1a over each
    /// label's length and lower-cased bytes, right to left), so all of them cost one pass.
    private static func forEachSuffix(of bytes: [UInt8], at offset: Int, upTo limit: Int, _ body: (Suffix) -> Void) throws(DNSWireError) {
        // A 255-byte name has at most 127 labels.
        let result: Result<Void, DNSWireError> = withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { starts in
            var count = 0
            var cursor = NameCursor(at: offset)
            do throws(DNSWireError) {
                while let label = try cursor.next(in: bytes) {
                    starts[count] = label.lowerBound
                    count += 1
                }
            } catch {
                return .failure(error)
            }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var first = count - 1
            while first >= 0, count - first <= limit {
                let start = starts[first], length = Int(bytes[start - 1])
                hash = (hash ^ UInt64(length)) &* 0x100_0000_01b3
                for i in start..<(start + length) { hash = (hash ^ UInt64(Wire.lower(bytes[i]))) &* 0x100_0000_01b3 }
                body(Suffix(bytes: bytes, starts: starts, first: first, total: count, hash: hash))
                first -= 1
            }
            return .success(())
        }
        try result.get()
    }
}
