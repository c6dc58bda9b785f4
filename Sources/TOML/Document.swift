/// The document as it is being built: mutable tables, arrays of tables, and immutable
/// values (scalars, arrays, inline tables). The rules about what may be defined or
/// extended later are kept beside it, in `NamespaceFlags`.
final class MutableTable {
    var order: [String] = []
    var slots: [String: Slot] = [:]
    var position: SourcePosition

    init(position: SourcePosition) {
        self.position = position
    }

    struct Slot {
        var keyPosition: SourcePosition
        var node: Node
    }

    enum Node {
        case table(MutableTable)
        case tableArray([MutableTable], SourcePosition)
        case value(TOMLValue)
    }

    func insert(_ key: String, at position: SourcePosition, _ node: Node) {
        order.append(key)
        slots[key] = Slot(keyPosition: position, node: node)
    }

    /// Walks (creating missing tables) down `path`; in an array of tables, into its last
    /// table. Fails where a value stands in the way.
    func nest(_ path: [KeyPart], accessArrays: Bool = true) throws(TOMLError) -> MutableTable {
        var table = self
        for part in path {
            guard let slot = table.slots[part.name] else {
                let created = MutableTable(position: part.position)
                table.insert(part.name, at: part.position, .table(created))
                table = created
                continue
            }
            switch slot.node {
            case let .table(inner):
                table = inner
            case let .tableArray(tables, _) where accessArrays:
                table = tables[tables.count - 1]
            default:
                throw TOMLError("\"\(part.name)\" is already a value (defined at \(slot.keyPosition)); it cannot hold keys", at: part.position)
            }
        }
        return table
    }

    func freeze() -> TOMLTable {
        TOMLTable(entries: order.map { key in
            let slot = slots[key]!
            return TOMLTable.Entry(key: key, keyPosition: slot.keyPosition, value: slot.node.freeze())
        }, position: position)
    }
}

extension MutableTable.Node {
    func freeze() -> TOMLValue {
        switch self {
        case let .table(table):
            return TOMLValue(.table(table.freeze()), at: table.position)
        case let .tableArray(tables, position):
            return TOMLValue(.array(tables.map { TOMLValue(.table($0.freeze()), at: $0.position) }), at: position)
        case let .value(value):
            return value
        }
    }
}

struct KeyPart {
    var name: String
    var position: SourcePosition
}

/// What TOML forbids later: re-declaring a table (explicit), or changing what an inline
/// table or array literal made (frozen). Flags are kept per key path, as TOML's reference
/// parsers do; declaring a new [[array]] element clears the flags below it.
struct NamespaceFlags {
    enum Flag { case explicit, frozen }

    final class Node {
        var flags: Set<Flag> = []
        var recursive: Set<Flag> = []
        var nested: [String: Node] = [:]
    }

    private let root = Node()
    private var pending: [([String], Flag)] = []

    func isSet(_ path: [String], _ flag: Flag) -> Bool {
        guard let stem = path.last else { return false }
        var container = root.nested
        for key in path.dropLast() {
            guard let inner = container[key] else { return false }
            if inner.recursive.contains(flag) { return true }
            container = inner.nested
        }
        guard let node = container[stem] else { return false }
        return node.flags.contains(flag) || node.recursive.contains(flag)
    }

    func set(_ path: [String], _ flag: Flag, recursive: Bool) {
        var node = root
        for key in path {
            if let inner = node.nested[key] {
                node = inner
            } else {
                let inner = Node()
                node.nested[key] = inner
                node = inner
            }
        }
        if recursive { node.recursive.insert(flag) } else { node.flags.insert(flag) }
    }

    func unsetAll(_ path: [String]) {
        var node = root
        for key in path.dropLast() {
            guard let inner = node.nested[key] else { return }
            node = inner
        }
        if let stem = path.last { node.nested[stem] = nil }
    }

    /// Tables made by dotted keys become explicit when the section ends: within it more
    /// dotted keys may add to them; after it neither a header nor a dotted key may.
    mutating func addPending(_ path: [String], _ flag: Flag) { pending.append((path, flag)) }

    mutating func finalizePending() {
        for (path, flag) in pending { set(path, flag, recursive: false) }
        pending = []
    }
}
