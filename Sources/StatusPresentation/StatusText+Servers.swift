import Control

extension StatusText {
    /// Several servers: the one in use, how it was chosen and why.
    static func servers(_ s: ServerChoiceStatus) -> String {
        "  servers   \(s.mode): \(s.current) (\(s.state)), \((s.files.firstIndex(of: s.current) ?? 0) + 1) of \(s.files.count): \(s.reason)"
    }
}
