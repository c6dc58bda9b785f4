/// The files `route.executables` and `bypass.executables` name, as the file system has them.
/// A rule is about a file, not a name: vpnd marks the file (fanotify), so every name it has
/// (a hard link, a symbolic link to it) runs it under the rule, and a script is matched when
/// it is executed. A path that names no program makes the rule do nothing, which an admin
/// must hear about: `vpnctl check` refuses it, vpnd warns and shows it in its status.
public struct ExecutableFile: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// Nothing there, or it cannot be looked at: why, as words that follow the path
        /// ("does not exist").
        case missing(String)
        case directory
        /// A device, socket or pipe.
        case notRegular
        /// A regular file without any execute bit, or on a file system mounted noexec: why,
        /// as words that follow the path.
        case notExecutable(String)
        /// A regular executable file; `script` when it starts with "#!".
        case program(script: Bool)
    }

    /// The file's identity while it lives: (device, inode).
    public struct Identity: Hashable, Sendable, Comparable {
        public var device: UInt64
        public var inode: UInt64
        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }
        public static func < (a: Identity, b: Identity) -> Bool { (a.device, a.inode) < (b.device, b.inode) }
    }

    public var kind: Kind
    /// Where a symbolic link leads (the path with every link resolved); nil for a path that
    /// is no link.
    public var target: String?
    public var identity: Identity?

    public init(kind: Kind, target: String? = nil, identity: Identity? = nil) {
        self.kind = kind
        self.target = target
        self.identity = identity
    }

    /// "PATH" or "PATH -> TARGET", as `vpnctl check` and status show a listed path.
    public static func shown(_ path: String, target: String?) -> String {
        target.map { "\(path) -> \($0)" } ?? path
    }

    /// Why the file cannot run under the rule, or nil when it can.
    public var problem: String? {
        switch kind {
        case let .missing(reason): return reason
        case .directory: return "is a directory, not a program"
        case .notRegular: return "is not a regular file (a device, socket or pipe)"
        case let .notExecutable(why): return why
        case .program: return nil
        }
    }
}

/// Looks listed paths up in the file system (vpnctl and vpnd: TrustedFiles'
/// SystemExecutableInspector; tests: a table).
public protocol ExecutableInspector {
    func inspect(_ path: String) -> ExecutableFile
}

public enum ExecutableFiles {
    /// One listed path with its list, profile and where it was written.
    public struct Listing: Hashable, Sendable {
        public var path: String
        public var profile: String
        /// "route.executables" or "bypass.executables".
        public var key: String
        public var location: SourceLocation?

        /// Routed into a profile, or bypassed (by any number of profiles).
        var fate: String { key == "route.executables" ? "route \(profile)" : "bypass" }
    }

    /// Every listed path of the policy, in profile order.
    public static func listings(_ policy: Policy) -> [Listing] {
        policy.profiles.flatMap { profile in
            profile.routeExecutables.map { Listing(path: $0, profile: profile.name, key: "route.executables", location: profile.executableLocations[$0]) }
                + profile.bypassExecutables.map { Listing(path: $0, profile: profile.name, key: "bypass.executables", location: profile.executableLocations[$0]) }
        }
    }

    /// The problems with the policy's listed files, each at the line that names the file: a
    /// path that names nothing, a directory, a file nobody can execute; and two paths that
    /// are one file (a hard or symbolic link) given different fates, which would make the
    /// file's fate depend on the name it was started by.
    public static func diagnose(_ policy: Policy, inspector: ExecutableInspector) -> [PolicyDiagnostic] {
        var diagnostics: [PolicyDiagnostic] = []
        var byFile: [ExecutableFile.Identity: [Listing]] = [:]
        for listing in listings(policy) {
            let file = inspector.inspect(listing.path)
            if let problem = file.problem {
                let named = "profile \"\(listing.profile)\": \(listing.key) \(ExecutableFile.shown(listing.path, target: file.target))"
                diagnostics.append(PolicyDiagnostic("\(named) \(problem); the rule would match nothing", at: listing.location))
            } else if let identity = file.identity {
                byFile[identity, default: []].append(listing)
            }
        }
        for (_, names) in byFile.sorted(by: { $0.key < $1.key }) {
            // One fate per file: routed into one profile, or bypassed (by any profiles).
            guard let first = names.first else { continue }
            for other in names.dropFirst() where other.fate != first.fate {
                diagnostics.append(PolicyDiagnostic(
                    "profile \"\(other.profile)\": \(other.key) \(other.path) is the same file as \(first.key) \(first.path) of profile \"\(first.profile)\"\(first.location.map { " (\($0))" } ?? ""); a program has one fate whatever name starts it",
                    at: other.location))
            }
        }
        return diagnostics
    }
}
