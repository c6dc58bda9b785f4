/// A table: its keys in the order they first appear in the document, each with
/// the position of the key itself (where a "duplicate" or "unknown key" report
/// should point) and its value (where a "wrong type" report should point).
public struct TOMLTable: Sendable, RandomAccessCollection {
    public struct Entry: Sendable {
        public var key: String
        public var keyPosition: SourcePosition
        public var value: TOMLValue

        public init(key: String, keyPosition: SourcePosition, value: TOMLValue) {
            self.key = key
            self.keyPosition = keyPosition
            self.value = value
        }
    }

    public private(set) var entries: [Entry]
    /// Where the table is defined: its `[header]`, its `{`, or for a table
    /// that was only created implicitly, the key that created it.
    public var position: SourcePosition
    // Lookups by key must not be linear: consumers look up every known key.
    // Keys match by Unicode scalars, as in TOML, not by canonical equivalence.
    private var keyList: [String]
    private var index: KeyIndex

    public init(position: SourcePosition = SourcePosition(line: 1, column: 1)) {
        self.entries = []
        self.position = position
        self.keyList = []
        self.index = KeyIndex()
    }

    /// Entries whose keys must be distinct, with their keys in the same
    /// order and an index built from those keys; the parser guarantees that.
    init(position: SourcePosition, uniqueEntries: [Entry], keys: [String], index: KeyIndex) {
        self.entries = uniqueEntries
        self.position = position
        self.keyList = keys
        self.index = index
    }

    public subscript(key: String) -> TOMLValue? {
        guard let found = index.find(key, in: keyList) else { return nil }
        return entries[found].value
    }

    public func entry(forKey key: String) -> Entry? {
        guard let found = index.find(key, in: keyList) else { return nil }
        return entries[found]
    }

    public func contains(key: String) -> Bool {
        index.find(key, in: keyList) != nil
    }

    public var keys: [String] { keyList }

    /// Follows a path of keys through nested tables, e.g. `["profile", "work"]`.
    /// Arrays are not entered.
    public func value(atPath path: [String]) -> TOMLValue? {
        guard let first = path.first, var value = self[first] else { return nil }
        for key in path.dropFirst() {
            guard let table = value.table, let next = table[key] else { return nil }
            value = next
        }
        return value
    }

    /// Sets a key's value, keeping the key's place if it exists and appending
    /// it otherwise. Returns the value it replaced. Meant for consumers that
    /// build tables themselves, e.g. to supply defaults.
    @discardableResult
    public mutating func updateValue(_ value: TOMLValue, forKey key: String, keyPosition: SourcePosition) -> TOMLValue? {
        if let found = index.find(key, in: keyList) {
            let old = entries[found].value
            entries[found] = Entry(key: key, keyPosition: keyPosition, value: value)
            return old
        }
        entries.append(Entry(key: key, keyPosition: keyPosition, value: value))
        keyList.append(key)
        index.appended(key, in: keyList)
        return nil
    }

    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(position: Int) -> Entry { entries[position] }
}
