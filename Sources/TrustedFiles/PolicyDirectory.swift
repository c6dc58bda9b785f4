import Glibc
import Policy

/// The policy directory: every `*.toml` file in name order, read as trusted files (see
/// `TrustedDirectory`): a file or directory that anyone but root could change, or a
/// symbolic link, is an error like a syntax error, and nothing is applied.
public enum PolicyDirectory {
    public static let defaultPath = "/etc/vpnexec/policy.d"
    /// Room for a domain list of 100,000 names and more; keeps a mistaken path (a log, a
    /// device) from being read whole.
    public static let fileLimit = 16 << 20

    /// The files of the directory vpnd reads as policy: `*.toml`, hidden ones left out (an
    /// editor's `.10-work.toml.swp`, a half-written `.new.toml`).
    public static func readsFile(named name: String) -> Bool {
        name.hasSuffix(".toml") && !name.hasPrefix(".")
    }

    public static func read(_ directory: String) throws(PolicyError) -> [PolicySource] {
        let opened: TrustedDirectory
        do {
            opened = try TrustedDirectory(directory)
        } catch {
            throw PolicyError([PolicyDiagnostic("cannot use policy directory \(directory): \(error.said(of: directory))", at: nil)])
        }
        return try read(opened.entries(where: readsFile(named:)).map { (opened, $0) })
    }

    /// Files named one by one (`vpnctl check FILE...`), read the same way.
    public static func readFiles(_ paths: [String]) throws(PolicyError) -> [PolicySource] {
        var problems: [PolicyDiagnostic] = []
        var files: [(TrustedDirectory, String)] = []
        for path in paths {
            do {
                files.append(try TrustedFile.open(path))
            } catch {
                problems.append(PolicyDiagnostic("cannot read \(path): \(error.said(of: path))", at: nil))
            }
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
        return try read(files)
    }

    private static func read(_ files: [(TrustedDirectory, String)]) throws(PolicyError) -> [PolicySource] {
        var sources: [PolicySource] = []
        var problems: [PolicyDiagnostic] = []
        for (directory, name) in files {
            let path = (directory.path == "/" ? "" : directory.path) + "/" + name
            do {
                sources.append(PolicySource(path: path, text: try directory.read(name, limit: fileLimit)))
            } catch {
                problems.append(PolicyDiagnostic("\(error)", at: nil))
            }
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
        return sources
    }
}

/// Users and groups from the system's databases (NSS).
public struct SystemNameResolver: NameResolver {
    public init() {}

    public func uid(ofUser name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }

    public func gid(ofGroup name: String) -> UInt32? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 65536)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }
}
