import TOML

/// Where something was written: the file and position an error message points at.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible, Codable {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    init(file: String, _ position: SourcePosition) {
        self.init(file: file, line: position.line, column: position.column)
    }

    public var description: String { "\(file):\(line):\(column)" }
}

public struct PolicyDiagnostic: Hashable, Sendable, CustomStringConvertible {
    public var location: SourceLocation?
    public var message: String

    public init(_ message: String, at location: SourceLocation?) {
        self.location = location
        self.message = message
    }

    public var description: String {
        location.map { "\($0): error: \(message)" } ?? "error: \(message)"
    }
}

/// Every problem found in a set of policy files, each with its file:line. A policy with
/// any error is refused whole: the running state stays as it was.
public struct PolicyError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [PolicyDiagnostic]

    public init(_ diagnostics: [PolicyDiagnostic]) {
        self.diagnostics = diagnostics
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
