@testable import Cgroups
import Descriptors
import Foundation
import NetTestSupport
import SocketPrograms
import Testing

/// Programs another vpnd left attached may be of another version, whose cgroup storage is
/// longer than ours (the layout grows at its end). Finding and adopting them reads that
/// storage: the kernel writes the whole value, so a buffer of our size would be overrun (the
/// heap corrupted, the process aborting later in free()). Read with the map's own size, the
/// owner and counters are ours to take over, and the process lives.
@Suite(.serialized) struct StorageVersionTests {
    @Test func aLongerStorageOfAnotherVersionIsReadWithinItsSize() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let hierarchy = try CgroupHierarchy.system()
        let path = "vxstorage-\(uniqueTag()).slice"
        let id = try hierarchy.create(path)
        cleanup.add("remove \(path)") { try? hierarchy.remove(path) }
        let net = try NetworkNamespace("vxsv\(uniqueTag())", cleanup: cleanup)
        let longer = SocketStorage.size + 256
        let owner = try net.within {
            let owner = try SocketProgramSet.currentOwner()
            let set = try SocketProgramSet(owner: owner, root: try #require(hierarchy.id(of: "")), parentDepth: 1, storageSize: longer)
            let cgroup = try FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY)
            let settings = SocketSettings(mark: 0x0100_0000, mask: 0x7f00_0000, requireMark: true, guardPath: true)
            for program in settings.programs { try set.attach(program, to: cgroup, path: path) }
            var counters = SocketStorage(settings: settings, owner: owner)
            counters.guardDrops = 7
            try set.write(settings, cgroup: id, counters: counters)
            return owner
        }
        // Many reads, each with an allocation after it: an overrun would not go unnoticed.
        for _ in 0..<50 {
            let adopted = AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner)
            #expect(Set(adopted.byCgroup.keys) == [path], "the longer storage's owner is read: its programs are found")
            let storage = try #require(adopted.storage(of: path, id: id))
            #expect(storage.owner == owner && storage.guardDrops == 7 && storage.settings.mark == 0x0100_0000, "\(storage)")
            _ = [UInt8](repeating: 1, count: 96)
        }
        let failures = AdoptedSocketPrograms.detachAll(hierarchy: hierarchy, owner: owner)
        #expect(failures.isEmpty, "\(failures)")
        #expect(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner).byCgroup.isEmpty, "detached again")
    }
}
