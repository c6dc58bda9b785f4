/// Assembles the document from headers and key/value pairs, enforcing the
/// spec's rules on what may be defined where:
///
/// - a key is defined once; a table is defined once, by a header or by
///   dotted keys, but may first be created implicitly by a longer header;
/// - inline tables and arrays written with `[ ]` are closed once written;
/// - dotted keys may not reach into a table a header defined, nor into a
///   table that dotted keys under an earlier header defined;
/// - `[[x]]` appends only to an array of tables, and `[x.y]` after it
///   refers to the array's last element.
///
/// Where the spec's prose leaves room, the rules follow the toml-test suite
/// and Python's tomllib (the tests compare against both): for instance a
/// table created implicitly by `[a.b.c]` may still be defined by dotted keys
/// under a later `[a]` (`b.x = 1`), but a table defined by a header may not.
struct DocumentBuilder {
    let root: TableNode
    /// The table that key/value pairs are currently added to.
    private(set) var current: TableNode
    /// Counts headers; see `TableNode.dottedKeySection`.
    private var section = 0

    init() {
        root = TableNode(position: SourcePosition(line: 1, column: 1))
        current = root
    }

    func finish() -> TOMLTable {
        root.makeTable()
    }

    // MARK: [table]

    mutating func defineTable(_ key: [KeyComponent], header: SourcePosition) throws(TOMLError) {
        // Messages only: built when an error is thrown.
        var names: [String] { key.map(\.name) }
        var display: String { "[\(KeyPath.render(names))]" }
        let parent = try parentForHeader(key, isArray: false)
        let last = key[key.count - 1]
        section += 1

        guard let existing = parent.entry(named: last.name) else {
            let table = try makeChild(of: parent, key: last)
            table.position = header
            table.headerPosition = header
            parent.append(key: last.name, keyPosition: last.position, slot: .table(table))
            current = table
            return
        }
        switch existing.slot {
        case .table(let table):
            if let first = table.headerPosition {
                throw TOMLError("table \(display) defined twice (first at line \(first.line))", at: last.position)
            }
            if let dotted = table.dottedKeyPosition {
                throw TOMLError("table \(display) cannot be defined by a header: dotted keys already defined it at line \(dotted.line)", at: last.position)
            }
            // It was only created implicitly by a longer header; this defines it.
            table.position = header
            table.headerPosition = header
            current = table
        case .tableArray(let array):
            throw TOMLError("table \(display) conflicts with the array of tables [[\(KeyPath.render(names))]] defined at line \(array.position.line)", at: last.position)
        case .value:
            throw TOMLError("cannot define table \(display): " + conflict(existing, names: names), at: last.position)
        }
    }

    // MARK: [[array of tables]]

    mutating func appendArrayTable(_ key: [KeyComponent], header: SourcePosition) throws(TOMLError) {
        var names: [String] { key.map(\.name) }
        var display: String { "[[\(KeyPath.render(names))]]" }
        let parent = try parentForHeader(key, isArray: true)
        let last = key[key.count - 1]
        section += 1

        let element = try makeChild(of: parent, key: last)
        element.position = header
        element.headerPosition = header
        guard let existing = parent.entry(named: last.name) else {
            parent.append(key: last.name, keyPosition: last.position, slot: .tableArray(TableArrayNode(position: header, first: element)))
            current = element
            return
        }
        switch existing.slot {
        case .tableArray(let array):
            array.elements.append(element)
            current = element
        case .table(let table):
            let line = (table.headerPosition ?? table.position).line
            throw TOMLError("cannot define array of tables \(display): [\(KeyPath.render(names))] is already a table (defined at line \(line))", at: last.position)
        case .value(let value) where value.array != nil:
            throw TOMLError("cannot define array of tables \(display): \(KeyPath.quoted(names)) is already an array written with [ ] at line \(existing.keyPosition.line), which cannot be extended", at: last.position)
        case .value:
            throw TOMLError("cannot define array of tables \(display): " + conflict(existing, names: names), at: last.position)
        }
    }

    /// Walks (creating as needed) every table a header names before its last key.
    private func parentForHeader(_ key: [KeyComponent], isArray: Bool) throws(TOMLError) -> TableNode {
        var table = root
        for index in 0..<(key.count - 1) {
            let component = key[index]
            guard let existing = table.entry(named: component.name) else {
                let child = try makeChild(of: table, key: component)
                table.append(key: component.name, keyPosition: component.position, slot: .table(child))
                table = child
                continue
            }
            switch existing.slot {
            case .table(let child):
                table = child
            case .tableArray(let array):
                // [a.b] after [[a]] adds to the most recent element of a.
                table = array.elements[array.elements.count - 1]
            case .value:
                let display = isArray ? "array of tables [[\(KeyPath.render(key))]]" : "table [\(KeyPath.render(key))]"
                throw TOMLError("cannot define \(display): " + conflict(existing, names: key[...index].map(\.name)), at: component.position)
            }
        }
        return table
    }

    // MARK: key = value

    /// Adds a key/value pair to the current table; a dotted key creates or
    /// goes through tables on the way.
    mutating func setValue(_ key: [KeyComponent], _ value: TOMLValue) throws(TOMLError) {
        var table = current
        for index in 0..<(key.count - 1) {
            let component = key[index]
            guard let existing = table.entry(named: component.name) else {
                let child = try makeChild(of: table, key: component)
                child.dottedKeySection = section
                child.dottedKeyPosition = component.position
                table.append(key: component.name, keyPosition: component.position, slot: .table(child))
                table = child
                continue
            }
            switch existing.slot {
            case .table(let child):
                if let header = child.headerPosition {
                    throw TOMLError("cannot add to table [\(KeyPath.render(child.path))] with the dotted key \(KeyPath.quoted(key)): the table was defined by a header at line \(header.line); add the key under that header", at: component.position)
                }
                if let dotted = child.dottedKeySection, dotted != section {
                    let line = child.dottedKeyPosition?.line ?? child.position.line
                    throw TOMLError("cannot add to table [\(KeyPath.render(child.path))] with the dotted key \(KeyPath.quoted(key)): dotted keys already defined that table under another header (line \(line))", at: component.position)
                }
                if child.dottedKeySection == nil {
                    child.dottedKeySection = section
                    child.dottedKeyPosition = component.position
                }
                table = child
            case .tableArray(let array):
                throw TOMLError("cannot add to \(KeyPath.quoted(key[...index])) with a dotted key: it is an array of tables (defined at line \(array.position.line))", at: component.position)
            case .value:
                throw TOMLError("cannot set key \(KeyPath.quoted(key)): " + conflict(existing, names: key[...index].map(\.name)), at: component.position)
            }
        }
        let last = key[key.count - 1]
        if let existing = table.entry(named: last.name) {
            throw TOMLError(Self.duplicateMessage(key, existing), at: last.position)
        }
        table.append(key: last.name, keyPosition: last.position, slot: .value(value))
    }

    // MARK: Helpers shared with inline tables

    static func duplicateMessage(_ key: [KeyComponent], _ existing: TableNode.Entry, context: String = "") -> String {
        let written = KeyPath.quoted(key) + context
        switch existing.slot {
        case .value:
            return "duplicate key \(written) (first defined at line \(existing.keyPosition.line))"
        case .table(let table):
            let line = (table.headerPosition ?? table.position).line
            return "duplicate key \(written): it is already a table (defined at line \(line))"
        case .tableArray(let array):
            return "duplicate key \(written): it is already an array of tables (defined at line \(array.position.line))"
        }
    }

    private func conflict(_ existing: TableNode.Entry, names: [String]) -> String {
        Self.conflict(existing, names: names)
    }

    static func conflict(_ existing: TableNode.Entry, names: [String]) -> String {
        let quoted = KeyPath.quoted(names)
        let line = existing.keyPosition.line
        if existing.slot.isInlineTable {
            return "\(quoted) is an inline table (line \(line)), and inline tables cannot be extended"
        }
        return "\(quoted) is already defined as \(existing.slot.descriptionWithArticle) at line \(line)"
    }

    private func makeChild(of parent: TableNode, key: KeyComponent) throws(TOMLError) -> TableNode {
        try Self.makeChild(of: parent, key: key)
    }

    static func makeChild(of parent: TableNode, key: KeyComponent) throws(TOMLError) -> TableNode {
        // Deep trees would make converting and freeing them recurse deeply.
        if parent.depth + 1 > TOML.maximumNestingDepth {
            throw TOMLError("tables are nested too deeply (the limit is \(TOML.maximumNestingDepth) levels)", at: key.position)
        }
        return TableNode(parent: parent, name: key.name, position: key.position)
    }
}

/// Collects the pairs of one inline table. Inside the braces, dotted keys may
/// build sub-tables, but nothing already complete (a nested inline table or
/// an array) may be added to, and no key may repeat.
struct InlineTableBuilder {
    let node: TableNode

    /// `depth` is the nesting of the braces, which counts towards the limit.
    init(position: SourcePosition, depth: Int) {
        node = TableNode(position: position, depth: depth)
    }

    func insert(_ key: [KeyComponent], _ value: TOMLValue) throws(TOMLError) {
        var table = node
        for index in 0..<(key.count - 1) {
            let component = key[index]
            guard let existing = table.entry(named: component.name) else {
                let child = try DocumentBuilder.makeChild(of: table, key: component)
                table.append(key: component.name, keyPosition: component.position, slot: .table(child))
                table = child
                continue
            }
            guard case .table(let child) = existing.slot else {
                throw TOMLError("cannot set key \(KeyPath.quoted(key)) in inline table: " + DocumentBuilder.conflict(existing, names: key[...index].map(\.name)), at: component.position)
            }
            table = child
        }
        let last = key[key.count - 1]
        if let existing = table.entry(named: last.name) {
            throw TOMLError(DocumentBuilder.duplicateMessage(key, existing, context: " in inline table"), at: last.position)
        }
        table.append(key: last.name, keyPosition: last.position, slot: .value(value))
    }

    func finish() -> TOMLValue {
        TOMLValue(.table(node.makeTable()), at: node.position)
    }
}
