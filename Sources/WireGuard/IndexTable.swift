/// Local index -> the keypair, or the peer whose initiation carries that index: how a
/// received message finds its session. Guarded by the engine's lock.
struct IndexTable {
    enum Entry {
        case handshake(Peer)
        case keypair(Keypair)
    }

    private var entries: [UInt32: Entry] = [:]

    subscript(index: UInt32) -> Entry? {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    /// A random index no entry uses.
    func fresh(_ random: any RandomSource) -> UInt32 {
        while true {
            let candidate = random.uint32()
            if entries[candidate] == nil { return candidate }
        }
    }
}
