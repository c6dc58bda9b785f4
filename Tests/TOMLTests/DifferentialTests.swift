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

/// Seeds come from TOML_FUZZ_SEED when set (to reproduce or explore), and
/// are fixed otherwise so that CI runs are deterministic.
private func fuzzSeed(_ defaultSeed: UInt64) -> UInt64 {
    if let text = ProcessInfoEnvironment.value("TOML_FUZZ_SEED"), let seed = UInt64(text) { return seed }
    return defaultSeed
}

extension DifferentialTests {
    @Test func generatedDocuments() throws {
        let seed = fuzzSeed(20_240_601)
        var generator = DocumentGenerator(seed: seed)
        let documents = (0..<400).map { index in
            FixtureFiles.Document(name: "generated #\(index) (seed \(seed))", bytes: generator.document())
        }
        let failures = try differentialFailures(documents, expectValid: true)
        for failure in failures.prefix(20) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) of \(documents.count) generated documents disagree (seed \(seed))")
    }

    @Test func mutatedDocuments() throws {
        let seed = fuzzSeed(7_654_321)
        var generator = DocumentGenerator(seed: seed &+ 1)
        var sources = try FixtureFiles.documents(under: "toml-test/valid").map(\.bytes)
        sources += try FixtureFiles.documents(under: "corpus/valid").map(\.bytes)
        sources += (0..<100).map { _ in generator.document() }
        var mutator = Mutator(seed: seed)
        var documents: [FixtureFiles.Document] = []
        for index in 0..<10000 {
            let source = sources[index % sources.count]
            documents.append(FixtureFiles.Document(name: "mutation #\(index) (seed \(seed))", bytes: mutator.mutate(source)))
        }
        let failures = try differentialFailures(documents)
        for failure in failures.prefix(20) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) of \(documents.count) mutated documents disagree (seed \(seed))")
    }
}
