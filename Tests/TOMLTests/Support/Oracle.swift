import Foundation

/// Python's tomllib, run as a subprocess, as the reference for the
/// differential tests. Documents are sent in one batch per call because
/// starting Python costs tens of milliseconds.
enum Oracle {
    enum Verdict {
        case accepted(JSON)
        case rejected(String)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// Fails (never skips) when python3 or its tomllib is missing: the
    /// differential tests are only meaningful with the reference present.
    static func verdicts(for documents: [[UInt8]]) throws -> [Verdict] {
        var input: [UInt8] = []
        for document in documents {
            input += Array("\(document.count)\n".utf8)
            input += document
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("toml-oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputURL = directory.appendingPathComponent("in")
        let outputURL = directory.appendingPathComponent("out")
        let errorURL = directory.appendingPathComponent("err")
        try Data(input).write(to: inputURL)
        try Data().write(to: outputURL)
        try Data().write(to: errorURL)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", fixtures.appendingPathComponent("tomllib_oracle.py").path]
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot run python3 for the tomllib differential test (install python3 >= 3.11): \(error)")
        }
        process.waitUntilExit()
        let errorText = String(decoding: try Data(contentsOf: errorURL), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "python3 tomllib oracle failed with status \(process.terminationStatus) (python3 >= 3.11 with tomllib is required): \(errorText)")
        }
        let lines = String(decoding: try Data(contentsOf: outputURL), as: UTF8.self).split(separator: "\n")
        guard lines.count == documents.count else {
            throw Failure(description: "tomllib oracle answered \(lines.count) of \(documents.count) documents: \(errorText)")
        }
        return try lines.map { line in
            let json = try JSON.parse(String(line))
            if let tree = json["ok"] { return .accepted(tree) }
            return .rejected(json["error"]?.stringValue ?? "?")
        }
    }
}

/// Documents stored under Fixtures/.
enum FixtureFiles {
    struct Document {
        var name: String
        var bytes: [UInt8]
    }

    /// All .toml files below a directory of Fixtures/, sorted by path.
    static func documents(under relativePath: String) throws -> [Document] {
        let root = Oracle.fixtures.appendingPathComponent(relativePath)
        guard let enumerator = FileManager.default.enumerator(atPath: root.path) else {
            throw Oracle.Failure(description: "missing fixture directory \(root.path)")
        }
        var documents: [Document] = []
        for case let path as String in enumerator where path.hasSuffix(".toml") {
            let bytes = [UInt8](try Data(contentsOf: root.appendingPathComponent(path)))
            documents.append(Document(name: relativePath + "/" + path, bytes: bytes))
        }
        return documents.sorted { $0.name < $1.name }
    }
}

/// Printable rendering of a document for failure messages.
func escapedForMessage(_ bytes: [UInt8]) -> String {
    var result = ""
    for byte in bytes {
        switch byte {
        case 0x0A: result += "\\n"
        case 0x0D: result += "\\r"
        case 0x09: result += "\\t"
        case 0x5C: result += "\\\\"
        case 0x20..<0x7F: result.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            let digits = String(byte, radix: 16)
            result += "\\x" + (digits.count == 1 ? "0" : "") + digits
        }
    }
    return result
}

enum ProcessInfoEnvironment {
    static func value(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name]
    }
}
