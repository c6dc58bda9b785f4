/// A key compared the way TOML compares keys: by Unicode scalars. Swift's
/// String equality uses canonical equivalence, under which "\u{E9}" and
/// "e\u{301}" are the same string, but they are two different TOML keys.
struct ExactKey: Hashable {
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (lhs: ExactKey, rhs: ExactKey) -> Bool {
        lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
