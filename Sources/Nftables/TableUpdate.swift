/// How to turn the table the kernel holds (`old`, as last applied) into `new` in one
/// transaction without re-creating what stays: sets, counters and chains that did not
/// change stay, with their elements and counts, and so do the rules of a chain whose rules
/// did not change (unless they name an object that must be made anew). A cgroup that joins
/// a profile, or an address the DNS proxy learned, is then an element added to a map, not
/// a rewrite of rules. A policy reload then costs what changed, not what the DNS proxy learned (a
/// timeout set of 100,000 addresses stays where it is instead of being read back and
/// written again). Pure: the netlink edge sends the steps in this order, which is the
/// order the kernel's reference checks need (no rule refers to a set or chain being
/// deleted, no element to a chain not yet made).
public struct NftTableUpdate: Hashable, Sendable {
    public struct Elements: Hashable, Sendable {
        public var set: String
        public var elements: [NftElement]
    }

    /// 1. Rules of these chains are flushed (the chains of `old` that change or go).
    public var flushedChains: [String] = []
    /// 2. Elements removed from sets that stay.
    public var removedElements: [Elements] = []
    /// 3. Sets, chains and counters deleted (gone, or changed in a way that needs a new object).
    public var deletedSets: [String] = []
    public var deletedChains: [String] = []
    public var deletedCounters: [String] = []
    /// 4. Objects created: counters, chains, then sets with their elements.
    public var createdCounters: [NftCounter] = []
    public var createdChains: [NftChain] = []
    public var createdSets: [NftSet] = []
    /// 5. Elements added to sets that stay.
    public var addedElements: [Elements] = []
    /// 6. The rules of the chains that were flushed or made, in order.
    public var rules: [NftChain] = []

    /// Sets whose elements carry timeouts and that are made anew: what the kernel holds in
    /// them must be read and put into the new set (`createdSets`), or it is lost.
    public var recreatedTimeoutSets: [String] { createdSets.filter { $0.timeout && oldSetNames.contains($0.name) }.map(\.name) }
    private var oldSetNames: Set<String> = []

    /// `old` must be what the kernel holds, timeout sets' elements aside (those are the
    /// kernel's; `new`'s elements of a timeout set are added when missing).
    public init(from old: NftTable, to new: NftTable) {
        precondition(old.family == new.family && old.name == new.name, "an update stays within one table")
        oldSetNames = Set(old.sets.map(\.name))

        let oldCounters = Dictionary(old.counters.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newCounterNames = Set(new.counters.map(\.name))
        for counter in new.counters {
            if let before = oldCounters[counter.name] {
                // A counter's comment is part of the object: a new comment needs a new object.
                if before.comment != counter.comment {
                    deletedCounters.append(counter.name)
                    createdCounters.append(counter)
                }
            } else {
                createdCounters.append(counter)
            }
        }
        deletedCounters = old.counters.map(\.name).filter { !newCounterNames.contains($0) } + deletedCounters

        let oldChains = Dictionary(old.chains.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newChainNames = Set(new.chains.map(\.name))
        for chain in new.chains {
            if let before = oldChains[chain.name] {
                if before.base != chain.base {
                    deletedChains.append(chain.name)
                    createdChains.append(NftChain(name: chain.name, base: chain.base))
                }
            } else {
                createdChains.append(NftChain(name: chain.name, base: chain.base))
            }
        }
        deletedChains = old.chains.map(\.name).filter { !newChainNames.contains($0) } + deletedChains

        let oldSets = Dictionary(old.sets.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newSetNames = Set(new.sets.map(\.name))
        for set in new.sets {
            guard let before = oldSets[set.name], Self.shape(before) == Self.shape(set),
                  // Interval sets hold boundaries computed from all their elements.
                  !(set.interval && before.elements != set.elements) else {
                if oldSets[set.name] != nil { deletedSets.append(set.name) }
                createdSets.append(set)
                continue
            }
            let held = Set(before.elements)
            let wanted = Set(set.elements)
            let plus = set.elements.filter { !held.contains($0) }
            // Elements of a timeout set that `old` does not list may be the kernel's own.
            let minus = set.timeout ? [] : before.elements.filter { !wanted.contains($0) }
            if !minus.isEmpty { removedElements.append(Elements(set: set.name, elements: minus)) }
            if !plus.isEmpty { addedElements.append(Elements(set: set.name, elements: plus)) }
        }
        deletedSets = old.sets.map(\.name).filter { !newSetNames.contains($0) } + deletedSets

        // A chain keeps its rules (and the kernel's handles for them) when they are the same
        // and name nothing deleted or made anew.
        let gone = Set(deletedSets.map(NftObjectReference.set) + deletedCounters.map(NftObjectReference.counter)
                       + deletedChains.map(NftObjectReference.chain))
        let made = Set(createdChains.map(\.name))
        let oldRules = Dictionary(old.chains.map { ($0.name, $0.rules) }, uniquingKeysWith: { a, _ in a })
        let kept = Set(new.chains.filter { chain in
            oldRules[chain.name] == chain.rules && !made.contains(chain.name)
                && !chain.rules.contains { $0.statements.contains { $0.reference.map(gone.contains) ?? false } }
        }.map(\.name))
        flushedChains = old.chains.map(\.name).filter { !kept.contains($0) }
        rules = new.chains.filter { !kept.contains($0.name) }
    }

    /// Everything of a set but its elements.
    private static func shape(_ set: NftSet) -> NftSet {
        var copy = set
        copy.elements = []
        return copy
    }
}
