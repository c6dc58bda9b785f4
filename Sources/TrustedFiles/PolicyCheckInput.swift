import Glibc
import Policy

/// What `vpnctl check PATH...` reads, so that it says what vpnd would: the policy directory
/// (without a path, vpnd's default one) read as vpnd reads it, or files named one by one,
/// each one that vpnd would read in that directory, in the order it would read them.
public enum PolicyCheckInput: Equatable, Sendable {
    case directory(String)
    case files([String])

    /// What a path names, as far as the choice between a directory and files goes.
    public enum PathKind: Sendable {
        case directory, other, missing
    }

    /// A command line that names no one thing vpnd reads: said as a usage error.
    public struct UsageError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// `paths` as one directory or as files; `kind` tells them apart (the system's by
    /// default; tests pass their own).
    public static func from(_ paths: [String], kind: (String) -> PathKind = PolicyCheckInput.kind(of:)) throws(UsageError) -> PolicyCheckInput {
        guard !paths.isEmpty else { return .directory(PolicyDirectory.defaultPath) }
        let directories = paths.filter { kind($0) == .directory }
        if directories.isEmpty { return .files(paths) }
        guard directories.count == paths.count else {
            throw UsageError(description: "check takes a policy directory or policy files, not both: \(directories.joined(separator: ", ")) \(directories.count == 1 ? "is a directory" : "are directories")")
        }
        guard paths.count == 1 else {
            throw UsageError(description: "check takes one policy directory (vpnd reads one): \(paths.joined(separator: ", ")) are directories")
        }
        return .directory(paths[0])
    }

    /// The sources, read as vpnd reads them. A file vpnd would never read as policy (not
    /// `*.toml`, or hidden) is refused: checking it would say a policy is fine that vpnd
    /// does not see. Files are read in name order, as vpnd reads its directory, so that
    /// marks given by order and "defined twice (first at ...)" come out as vpnd's would.
    public func read() throws(PolicyError) -> [PolicySource] {
        switch self {
        case let .directory(path):
            return try PolicyDirectory.read(path)
        case let .files(paths):
            let ignored = paths.filter { Self.kind(of: $0) != .missing && !PolicyDirectory.readsFile(named: Self.name($0)) }
            guard ignored.isEmpty else {
                throw PolicyError(ignored.map { PolicyDiagnostic(Self.neverRead($0), at: nil) })
            }
            return try PolicyDirectory.readFiles(paths.enumerated().sorted { (Self.name($0.element), $0.offset) < (Self.name($1.element), $1.offset) }.map(\.element))
        }
    }

    static func neverRead(_ path: String) -> String {
        "\(path): vpnd would never read this file as policy: it reads the *.toml files of its policy directory (\(PolicyDirectory.defaultPath)), not hidden ones"
    }

    /// The file name, the part vpnd's directory order and suffix go by.
    static func name(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// By stat(2), which follows a symbolic link: a link to a directory is taken as one, and
    /// then refused as vpnd refuses links.
    public static func kind(of path: String) -> PathKind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        return info.st_mode & S_IFMT == S_IFDIR ? .directory : .other
    }
}
