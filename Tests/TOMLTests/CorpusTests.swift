import Testing
import TOML

/// The hand-written corpus under Fixtures/corpus: valid documents covering
/// the spec's corners, and invalid documents that each hold one mistake and
/// start with "# expect LINE:COLUMN message" naming where and what our error
/// must say.
@Suite struct CorpusTests {
    @Test func validCorpusMatchesTomllib() throws {
        let documents = try FixtureFiles.documents(under: "corpus/valid")
        #expect(documents.count >= 60)
        let failures = try differentialFailures(documents, expectValid: true)
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    @Test func invalidCorpusIsRejectedByBoth() throws {
        let documents = try FixtureFiles.documents(under: "corpus/invalid")
        #expect(documents.count >= 200)
        let failures = try differentialFailures(documents, expectValid: false)
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    @Test func invalidCorpusErrorsNameTheRightPlace() throws {
        for document in try FixtureFiles.documents(under: "corpus/invalid") {
            guard let newline = document.bytes.firstIndex(of: 0x0A) else {
                Issue.record("\(document.name) has no expectation line")
                continue
            }
            let header = String(decoding: document.bytes[..<newline], as: UTF8.self)
            let parts = header.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == "#", parts[1] == "expect" else {
                Issue.record("\(document.name): malformed expectation line \(header)")
                continue
            }
            let expectedPosition = String(parts[2])
            let expectedMessage = String(parts[3])
            do {
                _ = try TOML.parse(document.bytes)
                Issue.record("\(document.name): accepted, expected \(expectedPosition) \(expectedMessage)")
            } catch {
                let position = "\(error.position.line):\(error.position.column)"
                #expect(position == expectedPosition, "\(document.name): \(error)")
                #expect(error.message.contains(expectedMessage), "\(document.name): \(error)")
            }
        }
    }
}
