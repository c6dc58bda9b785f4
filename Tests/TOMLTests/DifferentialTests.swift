import Foundation
import Testing
import TOML

/// Our parser against Python's tomllib (the TOML 1.0 reference in the standard library):
/// the same documents must be accepted or rejected alike, and accepted ones must hold
/// the same values. Python compares; a missing python3/tomllib fails the test.
enum Reference {
    static let script = #"""
    import datetime, json, math, struct, sys, tomllib
    def tag(v):
        if isinstance(v, bool): return {"type": "bool", "value": "true" if v else "false"}
        if isinstance(v, int): return {"type": "integer", "value": str(v)}
        if isinstance(v, float):
            if math.isnan(v): return {"type": "float", "value": "nan"}
            return {"type": "float", "value": str(struct.unpack("<Q", struct.pack("<d", v))[0])}
        if isinstance(v, str): return {"type": "string", "value": v}
        if isinstance(v, datetime.datetime):
            off = v.utcoffset()
            return {"type": "datetime", "value": [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond,
                                                  None if off is None else int(off.total_seconds() // 60)]}
        if isinstance(v, datetime.date): return {"type": "date", "value": [v.year, v.month, v.day]}
        if isinstance(v, datetime.time): return {"type": "time", "value": [v.hour, v.minute, v.second, v.microsecond]}
        if isinstance(v, list): return [tag(x) for x in v]
        return {k: tag(x) for k, x in v.items()}
    def beyond64(v):
        if isinstance(v, list): return any(beyond64(x) for x in v)
        if isinstance(v, dict):
            if v.get("type") == "integer" and isinstance(v.get("value"), str):
                return not (-2**63 <= int(v["value"]) < 2**63)
            return any(beyond64(x) for x in v.values())
        return False
    verdicts = []
    for case in json.load(sys.stdin):
        try:
            theirs = {"ok": True, "value": tag(tomllib.loads(case["doc"]))}
        except tomllib.TOMLDecodeError as e:
            theirs = {"ok": False, "error": str(e)}
        ours = case["ours"]
        # TOML 1.0 requires an error for integers that do not fit in 64 bits; tomllib
        # returns Python's arbitrary-precision int instead.
        if not ours["ok"] and "does not fit in 64 bits" in ours["error"] and theirs["ok"] and beyond64(theirs["value"]):
            verdicts.append("agree")
        elif ours["ok"] != theirs["ok"]:
            verdicts.append(f"accept/reject differ: ours={ours.get('error', 'accepted')!r} tomllib={theirs.get('error', 'accepted')!r}")
        elif ours["ok"] and ours["value"] != theirs["value"]:
            verdicts.append(f"values differ: ours={json.dumps(ours['value'])[:400]} tomllib={json.dumps(theirs['value'])[:400]}")
        else:
            verdicts.append("agree")
    json.dump(verdicts, sys.stdout)
    """#

    /// One verdict per document: "agree" or what differs.
    static func compare(_ documents: [String]) throws -> [String] {
        let cases: [[String: Any]] = documents.map { doc in
            do {
                return ["doc": doc, "ours": ["ok": true, "value": tag(.table(try TOML.parse(doc)))]]
            } catch {
                return ["doc": doc, "ours": ["ok": false, "error": String(describing: error)]]
            }
        }
        let input = try JSONSerialization.data(withJSONObject: cases)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let writer = Thread { try? stdin.fileHandleForWriting.write(contentsOf: input); try? stdin.fileHandleForWriting.close() }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let verdicts = try JSONSerialization.jsonObject(with: output) as? [String] else {
            throw ReferenceUnavailable(description: "python3 with tomllib (Python >= 3.11) is needed for this test: \(String(decoding: errors, as: UTF8.self))")
        }
        return verdicts
    }

    struct ReferenceUnavailable: Error, CustomStringConvertible { var description: String }

    static func tag(_ kind: TOMLValueKind) -> Any {
        switch kind {
        case let .string(s): return ["type": "string", "value": s]
        case let .integer(i): return ["type": "integer", "value": String(i)]
        case let .float(f): return ["type": "float", "value": f.isNaN ? "nan" : String(f.bitPattern)]
        case let .boolean(b): return ["type": "bool", "value": b ? "true" : "false"]
        case let .dateTime(d):
            let micro = (d.time?.nanosecond ?? 0) / 1000
            if let date = d.date, let time = d.time {
                return ["type": "datetime", "value": [date.year, date.month, date.day, time.hour, time.minute, time.second, micro,
                                                      d.offsetMinutes.map { $0 as Any } ?? NSNull()] as [Any]]
            }
            if let date = d.date { return ["type": "date", "value": [date.year, date.month, date.day]] }
            let time = d.time!
            return ["type": "time", "value": [time.hour, time.minute, time.second, micro]]
        case let .array(items): return items.map { tag($0.kind) }
        case let .table(table):
            var result: [String: Any] = [:]
            for entry in table.entries { result[entry.key] = tag(entry.value.kind) }
            return result
        }
    }
}

@Suite struct DifferentialTests {
    @Test func handWrittenCorpusAgreesWithTomllib() throws {
        let documents = Corpus.valid + Corpus.invalid
        let verdicts = try Reference.compare(documents)
        for (doc, verdict) in zip(documents, verdicts) where verdict != "agree" {
            Issue.record("\(verdict)\n--- document ---\n\(doc)")
        }
        // The corpus is meant to exercise both sides: check it does.
        let accepted = documents.filter { (try? TOML.parse($0)) != nil }.count
        #expect(accepted >= Corpus.valid.count && accepted < documents.count)
    }

    @Test func randomDocumentsAgreeWithTomllib() throws {
        var generator = DocumentGenerator(seed: 0x7655_7865_6300 + UInt64(Corpus.valid.count))
        let documents = (0..<300).map { _ in generator.document() }
        let verdicts = try Reference.compare(documents)
        for (doc, verdict) in zip(documents, verdicts) where verdict != "agree" {
            Issue.record("\(verdict)\n--- document ---\n\(doc)")
        }
        for doc in documents {
            do { _ = try TOML.parse(doc) } catch { Issue.record("generated document refused: \(error)\n\(doc)") }
        }
    }

    @Test func mutatedDocumentsNeverCrashAndAgreeWithTomllib() throws {
        var generator = DocumentGenerator(seed: 0xBAD_5EED)
        var documents: [String] = []
        for _ in 0..<600 {
            documents.append(generator.mutate(generator.document()))
        }
        documents += Corpus.valid.map { generator.mutate($0) }
        let verdicts = try Reference.compare(documents)
        for (doc, verdict) in zip(documents, verdicts) where verdict != "agree" {
            Issue.record("\(verdict)\n--- document ---\n\(doc.debugDescription)")
        }
        let rejected = documents.filter { (try? TOML.parse($0)) == nil }.count
        #expect(rejected > 50 && rejected < documents.count, "mutations produce both valid and invalid documents")
    }
}
