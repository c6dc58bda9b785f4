/// A place in a TOML document, counted the way a person reading the file in an
/// editor counts: lines and columns start at 1, and a column advances by one
/// per Unicode scalar, so a tab or an "é" is a single column, not several bytes.
/// A leading byte-order mark is not counted.
public struct SourcePosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// "line:column", the form compilers use after a file name.
    public var description: String { "\(line):\(column)" }

    public static func < (lhs: SourcePosition, rhs: SourcePosition) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }
}
