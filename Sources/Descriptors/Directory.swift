import Glibc

/// One entry of a directory listing: its name, and whether the listing says it is a
/// directory (`d_type`; a file system that does not say gives false).
public struct DirectoryEntry: Hashable, Sendable {
    public let name: String
    public let isDirectory: Bool
}

public enum Directory {
    /// The entries of the directory at `path` but "." and "..", in the listing's order; none
    /// if it cannot be opened (a caller that must tell "empty" from "unreadable" opens it).
    public static func entries(of path: String) -> [DirectoryEntry] {
        guard let handle = opendir(path) else { return [] }
        defer { closedir(handle) }
        var entries: [DirectoryEntry] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { entries.append(DirectoryEntry(name: name, isDirectory: entry.pointee.d_type == UInt8(DT_DIR))) }
        }
        return entries
    }

    /// The names of those entries.
    public static func names(of path: String) -> [String] { entries(of: path).map(\.name) }
}
