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

    /// Keys from the document root (or from the enclosing inline table), for messages.
    let path: [String]
    var position: SourcePosition
    /// Set once a `[header]` (or `[[header]]`, for an element) has defined the table.
    var headerPosition: SourcePosition?
    /// The section (the stretch of lines under one header) in which dotted
    /// keys defined or went through this table, and where they first did.
    var dottedKeySection: Int?
    var dottedKeyPosition: SourcePosition?
    private(set) var entries: [Entry] = []
    private var indexByKey: [ExactKey: Int] = [:]

    init(path: [String], position: SourcePosition) {
        self.path = path
        self.position = position
    }

    func entry(named key: String) -> Entry? {
        guard let index = indexByKey[ExactKey(key)] else { return nil }
        return entries[index]
    }

    /// Adds a key the caller has checked is not there yet.
    func append(key: String, keyPosition: SourcePosition, slot: Slot) {
        indexByKey[ExactKey(key)] = entries.count
        entries.append(Entry(key: key, keyPosition: keyPosition, slot: slot))
    }

    func makeTable() -> TOMLTable {
        var result: [TOMLTable.Entry] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            result.append(TOMLTable.Entry(key: entry.key, keyPosition: entry.keyPosition, value: entry.slot.makeValue()))
        }
        return TOMLTable(position: position, uniqueEntries: result)
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
