/// "Did you mean": the word a mistyped one was closest to, as git and cargo suggest a
/// subcommand (`vpnctl stauts` -> status, `Adress` -> Address in a wg-quick file). A module
/// of its own so that the WireGuard parser and vpnctl share it without depending on each
/// other's.
public enum Suggestion {
    /// The candidate within `maximum` edits (insertions, deletions, substitutions, and
    /// swaps of two neighbours: "stauts" is one from "status") of `word`, the nearest; on a
    /// tie the first in `candidates`' order. Nil when none is that near.
    public static func closest(to word: String, among candidates: [String], maximum: Int = 2) -> String? {
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = self.distance(word, candidate)
            if distance <= maximum, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a
    /// substring), by characters.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}
