import Testing
import TOML

/// Parses a document that must be valid, recording the error otherwise.
func parseValid(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TOMLTable {
    do {
        return try TOML.parse(text)
    } catch {
        Issue.record("unexpected error: \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// The error a document that must be invalid produces.
func parseError(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> TOMLError? {
    parseError(Array(text.utf8), sourceLocation: sourceLocation)
}

func parseError(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> TOMLError? {
    do {
        let table = try TOML.parse(bytes)
        Issue.record("expected an error, got \(TaggedJSON.encode(table))", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Checks an error's position and that its message contains `message`.
func expectError(_ text: String, at line: Int, _ column: Int, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error = parseError(text, sourceLocation: sourceLocation) else { return }
    #expect(error.position == SourcePosition(line: line, column: column), "\(error)", sourceLocation: sourceLocation)
    #expect(error.message.contains(message), "\(error)", sourceLocation: sourceLocation)
}

func pos(_ line: Int, _ column: Int) -> SourcePosition {
    SourcePosition(line: line, column: column)
}
