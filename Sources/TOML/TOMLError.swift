/// The only error the parser throws, for bad syntax as well as for a document
/// that is well formed but breaks one of TOML's rules about keys and tables.
///
/// Consumers validating a parsed document can throw it too, with the position
/// of the offending key or value, so every report about a policy file has the
/// same shape.
public struct TOMLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var position: SourcePosition
    public var message: String

    public init(position: SourcePosition, message: String) {
        self.position = position
        self.message = message
    }

    public init(_ message: String, at position: SourcePosition) {
        self.init(position: position, message: message)
    }

    public var line: Int { position.line }
    public var column: Int { position.column }

    public var description: String { "line \(position.line), column \(position.column): \(message)" }

    /// The error as "file:line:column: message", which editors and terminals
    /// turn into a link to the spot.
    public func description(file: String) -> String {
        "\(file):\(position.line):\(position.column): \(message)"
    }
}
