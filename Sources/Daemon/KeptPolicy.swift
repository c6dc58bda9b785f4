import Descriptors
import Glibc
import Policy

/// The files of the policy that applied, in the state directory's policy.d: each written
/// beside and renamed over, then the ones no longer part of it removed. What the
/// boot-time killswitch applies is always a policy that applied.
struct KeptPolicy {
    let directory: String

    /// Nil when every file was kept; else what could not be, in words (the previous files
    /// stay as they were from that file on).
    func keep(_ sources: [PolicySource]) -> String? {
        mkdir(directory, 0o755)
        var kept: Set<String> = []
        for source in sources {
            let name = String(source.path.split(separator: "/").last ?? "")
            let temporary = directory + "/." + name + ".new"
            unlink(temporary)
            do { try DurableFile.replace(directory + "/" + name, with: Array(source.text.utf8), writingFirst: temporary) } catch {
                return "could not keep the applied policy in \(directory): \(error.reason); the boot-time killswitch keeps the previous one"
            }
            kept.insert(name)
        }
        for name in Directory.names(of: directory) where name.hasSuffix(".toml") && !kept.contains(name) { unlink(directory + "/" + name) }
        return nil
    }
}
