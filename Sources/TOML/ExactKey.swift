/// A key compared the way TOML compares keys: by Unicode scalars. Swift's
/// String equality uses canonical equivalence, under which "\u{E9}" and
/// "e\u{301}" are the same string, but they are two different TOML keys.
struct ExactKey: Hashable {
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func same(_ lhs: String, _ rhs: String) -> Bool {
        // String's == is a plain byte comparison for ASCII keys and rejects
        // most unequal keys cheaply; canonically equal keys are then checked
        // byte for byte.
        guard lhs.utf8.count == rhs.utf8.count, lhs == rhs else { return false }
        return lhs.utf8.elementsEqual(rhs.utf8)
    }

    static func == (lhs: ExactKey, rhs: ExactKey) -> Bool {
        same(lhs.string, rhs.string)
    }

    func hash(into hasher: inout Hasher) {
        // Equal bytes give equal String hashes, which is all a hash needs.
        hasher.combine(string)
    }
}
