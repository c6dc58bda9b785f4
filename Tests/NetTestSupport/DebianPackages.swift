import Foundation

/// Debian packages this machine does not have installed, unpacked (not installed: no
/// maintainer scripts, nothing of the host's changed) into a tree kept under the package's
/// .build, one per package list: `apt-get download` from the machine's mirror, `dpkg -x`.
public enum DebianPackages {
    /// The tree's path, made first if missing.
    public static func unpacked(_ packages: [String]) throws -> String {
        let names = packages.sorted()
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/test-packages").standardized.path
        let root = directory + "/" + SystemdRoot.digest(names.joined(separator: ","))
        if FileManager.default.fileExists(atPath: root + "/.complete") { return root }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Built aside and renamed, so a failed or interrupted download is never used.
        let partial = root + ".partial-\(uniqueTag())"
        defer { try? FileManager.default.removeItem(atPath: partial) }
        try FileManager.default.createDirectory(atPath: partial + "/debs", withIntermediateDirectories: true)
        let download = try Command.status(["sh", "-c", "cd \(partial)/debs && apt-get download \(names.joined(separator: " "))"])
        guard download.status == 0 else {
            throw TestEnvironmentError("apt-get download \(names.joined(separator: " ")) failed (it needs the Debian mirror): \(download.stderr.suffix(2000))")
        }
        for deb in try FileManager.default.contentsOfDirectory(atPath: partial + "/debs") where deb.hasSuffix(".deb") {
            try Command.run(["dpkg", "-x", partial + "/debs/" + deb, partial + "/root"])
        }
        FileManager.default.createFile(atPath: partial + "/root/.complete", contents: Data())
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.moveItem(atPath: partial + "/root", toPath: root)
        return root
    }
}
