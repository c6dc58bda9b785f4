import Testing
import TOML

/// Our parser against Python's tomllib on the same documents.
@Suite struct DifferentialTests {
    @Test func tomlTestSuiteValidDocuments() throws {
        let documents = try FixtureFiles.documents(under: "toml-test/valid")
        #expect(documents.count > 150)
        let failures = try differentialFailures(documents, expectValid: true)
        for failure in failures.prefix(30) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) of \(documents.count) documents disagree")
    }

    @Test func tomlTestSuiteInvalidDocuments() throws {
        let documents = try FixtureFiles.documents(under: "toml-test/invalid")
        #expect(documents.count > 400)
        let failures = try differentialFailures(documents, expectValid: false)
        for failure in failures.prefix(30) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) of \(documents.count) documents disagree")
    }
}
