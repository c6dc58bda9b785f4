import TOML

/// Compares our verdict on each document with tomllib's and returns one line
/// per disagreement. `expected` (when given) is what the corpus claims about
/// every document: both parsers must then also agree with the corpus.
func differentialFailures(_ documents: [FixtureFiles.Document], expectValid expected: Bool? = nil) throws -> [String] {
    let verdicts = try Oracle.verdicts(for: documents.map(\.bytes))
    var failures: [String] = []
    for (document, verdict) in zip(documents, verdicts) {
        let ours: Result<TOMLTable, TOMLError> = Result { () throws(TOMLError) in try TOML.parse(document.bytes) }
        let shown = "\(document.name) «\(escapedForMessage(Array(document.bytes.prefix(400))))»"
        switch (ours, verdict) {
        case (.success(let table), .accepted(let reference)):
            if let difference = TaggedJSON.difference(ours: TaggedJSON.encode(table), theirs: reference) {
                failures.append("\(shown): results differ at \(difference)")
            } else if expected == false {
                failures.append("\(shown): both parsers accept a document the corpus says is invalid")
            }
        case (.failure(let error), .rejected):
            if expected == true {
                failures.append("\(shown): both parsers reject a document the corpus says is valid; ours: \(error)")
            }
        case (.success, .rejected(let reason)):
            failures.append("\(shown): we accept it, tomllib rejects it: \(reason)")
        case (.failure(let error), .accepted):
            failures.append("\(shown): we reject it (\(error)), tomllib accepts it")
        }
    }
    return failures
}
