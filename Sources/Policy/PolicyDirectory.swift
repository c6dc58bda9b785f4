import Glibc

/// The policy directory: every `*.toml` file in name order.
public enum PolicyDirectory {
    public static let defaultPath = "/etc/vpnexec/policy.d"

    /// Reads the files; a missing or unreadable directory or file is a PolicyError too.
    public static func read(_ directory: String) throws(PolicyError) -> [PolicySource] {
        guard let handle = opendir(directory) else {
            throw PolicyError([PolicyDiagnostic("cannot read policy directory \(directory): \(String(cString: strerror(errno)))", at: nil)])
        }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".toml") && !name.hasPrefix(".") { names.append(name) }
        }
        closedir(handle)
        return try readFiles(names.sorted().map { directory + "/" + $0 })
    }

    public static func readFiles(_ paths: [String]) throws(PolicyError) -> [PolicySource] {
        var sources: [PolicySource] = []
        var diagnostics: [PolicyDiagnostic] = []
        for path in paths {
            if let text = readFile(path) {
                sources.append(PolicySource(path: path, text: text))
            } else {
                diagnostics.append(PolicyDiagnostic("cannot read \(path): \(String(cString: strerror(errno)))", at: nil))
            }
        }
        guard diagnostics.isEmpty else { throw PolicyError(diagnostics) }
        return sources
    }

    public static func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count > 0 { bytes += buffer[0..<count] }
            if count < buffer.count { break }
        }
        guard ferror(file) == 0 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
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

extension PolicyDirectory {
    /// The policy decides who may route through which tunnel: like sshd's StrictModes,
    /// refuse a directory or file that someone other than root could change.
    public static func checkOwnership(_ directory: String) throws(PolicyError) {
        var problems: [PolicyDiagnostic] = []
        var paths = [directory]
        if let handle = opendir(directory) {
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasSuffix(".toml") && !name.hasPrefix(".") { paths.append(directory + "/" + name) }
            }
            closedir(handle)
        }
        for path in paths {
            if let problem = ownershipProblem(path) { problems.append(PolicyDiagnostic(problem, at: nil)) }
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
    }

    /// Why root should not trust `path` (owned by someone else, or writable by group or
    /// others), or nil. A missing file is not an ownership problem.
    public static func ownershipProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if info.st_uid != 0 {
            return "\(path) is owned by uid \(info.st_uid), not root; refusing a file others could change"
        }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            return "\(path) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); refusing a file others could change"
        }
        return nil
    }
}
