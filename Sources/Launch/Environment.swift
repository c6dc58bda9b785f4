import Glibc

/// The process environment as a dictionary, without Foundation.
public enum ProcessInfoEnvironment {
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}

/// Writes to file descriptor 2 directly (Swift 6 forbids touching C's shared `stderr`).
public func writeStandardError(_ text: String) { writeAll(2, text) }

public func writeStandardOutput(_ text: String) { writeAll(1, text) }

private func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        bytes = bytes.dropFirst(count)
    }
}
