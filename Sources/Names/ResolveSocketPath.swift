/// Where a profile's varlink socket is: `DIRECTORY/PROFILE`, or `DIRECTORY/INDEX` for a
/// name too long for the cgroup storage's 63 bytes (the socket programs write the path
/// into the member's connect from there). Nil when neither fits.
public enum ResolveSocketPath {
    public static let maxLength = 63

    public static func path(directory: String, profile: String, index: UInt32) -> String? {
        for candidate in [directory + "/" + profile, directory + "/" + String(index)] where candidate.utf8.count <= maxLength {
            return candidate
        }
        return nil
    }

    /// Each profile's (name, index) with a path that fits.
    public static func paths(directory: String, profiles: [(name: String, index: UInt32)]) -> [String: String] {
        Dictionary(profiles.compactMap { profile in path(directory: directory, profile: profile.name, index: profile.index).map { (profile.name, $0) } },
                   uniquingKeysWith: { a, _ in a })
    }
}
