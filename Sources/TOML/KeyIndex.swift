/// Finds an entry's index by key. Most tables hold a handful of keys, for
/// which a scan is cheaper than hashing into a dictionary; the dictionary is
/// only built once a table grows past `threshold`, so lookups never become
/// linear in big tables.
struct KeyIndex {
    private static let threshold = 8
    private var dictionary: [ExactKey: Int]?

    init() {}

    /// Builds the index for keys known to be distinct.
    init<Keys: Collection<String>>(keys: Keys) {
        if keys.count > Self.threshold {
            var dictionary: [ExactKey: Int] = [:]
            dictionary.reserveCapacity(keys.count)
            for (offset, key) in keys.enumerated() {
                dictionary[ExactKey(key)] = offset
            }
            self.dictionary = dictionary
        }
    }

    /// `keys` must be the keys the index was built from, in order.
    func find<Keys: RandomAccessCollection<String>>(_ key: String, in keys: Keys) -> Int? where Keys.Index == Int {
        if let dictionary { return dictionary[ExactKey(key)] }
        for index in keys.indices where ExactKey.same(keys[index], key) {
            return index
        }
        return nil
    }

    /// Records that `key` was appended to `keys` (which already includes it).
    mutating func appended<Keys: RandomAccessCollection<String>>(_ key: String, in keys: Keys) where Keys.Index == Int {
        if dictionary != nil {
            dictionary![ExactKey(key)] = keys.count - 1
        } else if keys.count > Self.threshold {
            self = KeyIndex(keys: keys)
        }
    }
}
