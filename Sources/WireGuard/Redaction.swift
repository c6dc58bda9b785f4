/// How errors and log lines show text that came from a wg-quick file or the `wg` socket.
/// Both carry private and pre-shared keys, and errors end up on terminals and in the
/// journal, so a value is shown only when nothing in it is shaped like a key, and a key
/// name only when it is a plain word.
enum Redaction {
    /// A value quoted, unless it holds a run of 40 or more base64 characters (a base64 key
    /// is 44, a hex key 64: hex digits are base64 characters too).
    static func quoted(_ value: some StringProtocol) -> String {
        var run = 0
        for scalar in value.unicodeScalars {
            let base64 = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "+" || scalar == "/"
            run = base64 ? run + 1 : 0
            if run >= 40 { return "(a value not shown: it looks like a key)" }
        }
        return "\"\(value)\""
    }

    /// Whether `name` is a word of letters (and `extra`), short enough to be a key's name
    /// and not a key itself.
    static func isWord(_ name: some StringProtocol, extra: Unicode.Scalar? = nil) -> Bool {
        name.count <= 32 && !name.isEmpty
            && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == extra }
    }
}
