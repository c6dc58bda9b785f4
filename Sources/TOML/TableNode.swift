/// The mutable table tree the document is assembled in. Tables must stay
/// open for later headers and dotted keys to add to, which is easiest with
/// references; the finished tree is turned into value types once, at the end.
final class TableNode {
    enum Slot {
        /// Scalars, arrays written with `[ ]` and inline tables. These are
        /// complete when parsed and can never be added to afterwards.
        case value(TOMLValue)
        case table(TableNode)
        case tableArray(TableArrayNode)
    }

    struct Entry {
        let key: String
        let keyPosition: SourcePosition
        let slot: Slot
    }

    /// The table holding this one (for an element of an array of tables, the
    /// table holding the array) and the key it is under; only used to name
    /// the table in messages. Parents outlive children: the root owns all.
    private unowned let parent: TableNode?
    private let name: String
    /// Tables between this one and the root (or the enclosing inline table).
    let depth: Int
    var position: SourcePosition
    /// Set once a `[header]` (or `[[header]]`, for an element) has defined the table.
    var headerPosition: SourcePosition?
    /// The section (the stretch of lines under one header) in which dotted
    /// keys defined or went through this table, and where they first did.
    var dottedKeySection: Int?
    var dottedKeyPosition: SourcePosition?
    private(set) var entries: [Entry] = []
    private var keys: [String] = []
    private var index = KeyIndex()

    /// A root: of the document or of an inline table.
    init(position: SourcePosition, depth: Int = 0) {
        self.parent = nil
        self.name = ""
        self.depth = depth
        self.position = position
    }

    init(parent: TableNode, name: String, position: SourcePosition) {
        self.parent = parent
        self.name = name
        self.depth = parent.depth + 1
        self.position = position
    }

    /// Keys from the root to this table.
    var path: [String] {
        var names: [String] = []
        var node: TableNode? = self
        while let current = node, let parent = current.parent {
            names.append(current.name)
            node = parent
        }
        return names.reversed()
    }

    func entry(named key: String) -> Entry? {
        index.find(key, in: keys).map { entries[$0] }
    }

    /// Adds a key the caller has checked is not there yet.
    func append(key: String, keyPosition: SourcePosition, slot: Slot) {
        entries.append(Entry(key: key, keyPosition: keyPosition, slot: slot))
        keys.append(key)
        index.appended(key, in: keys)
    }

    func makeTable() -> TOMLTable {
        var result: [TOMLTable.Entry] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            result.append(TOMLTable.Entry(key: entry.key, keyPosition: entry.keyPosition, value: entry.slot.makeValue()))
        }
        return TOMLTable(position: position, uniqueEntries: result, keys: keys, index: index)
    }
}

/// An array of tables, grown by each `[[header]]` with its path.
final class TableArrayNode {
    let position: SourcePosition
    var elements: [TableNode]

    init(position: SourcePosition, first: TableNode) {
        self.position = position
        self.elements = [first]
    }
}

extension TableNode.Slot {
    func makeValue() -> TOMLValue {
        switch self {
        case .value(let value):
            return value
        case .table(let node):
            return TOMLValue(.table(node.makeTable()), at: node.position)
        case .tableArray(let array):
            let tables = array.elements.map { TOMLValue(.table($0.makeTable()), at: $0.position) }
            return TOMLValue(.array(tables), at: array.position)
        }
    }

    /// What the slot holds, for "is already defined as ..." messages.
    var descriptionWithArticle: String {
        switch self {
        case .value(let value):
            return value.table != nil ? "an inline table" : value.typeNameWithArticle
        case .table:
            return "a table"
        case .tableArray:
            return "an array of tables"
        }
    }

    var isInlineTable: Bool {
        if case .value(let value) = self, value.table != nil { return true }
        return false
    }
}
