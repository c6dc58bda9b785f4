import Cgroups
import Foundation
import NetTestSupport
import Testing

@Suite struct CgroupMountTests {
    @Test func findsUnifiedAndHybridMounts() {
        let hybrid = """
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw
        """
        #expect(CgroupMount.find(inMountInfo: hybrid) == "/sys/fs/cgroup/unified")
        let unified = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        #expect(CgroupMount.find(inMountInfo: unified) == "/sys/fs/cgroup")
        #expect(CgroupMount.find(inMountInfo: "1 0 0:1 / /my\\040cg rw - cgroup2 none rw\n") == "/my cg")
        #expect(CgroupMount.find(inMountInfo: "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n") == nil)
        // A later mount on a parent path shadows the hybrid one; a subtree bind mount comes last.
        let shadowed = hybrid + "\n50 31 0:38 /user.slice /srv/cg rw - cgroup2 cgroup2 rw\n51 23 0:38 / /sys/fs/cgroup rw - cgroup2 none rw\n"
        #expect(CgroupMount.candidates(inMountInfo: shadowed) == ["/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/srv/cg"])
    }
}

/// On this machine's real cgroup2 tree (found from mountinfo, never assumed).
@Suite(.serialized) struct CgroupHierarchyTests {
    @Test func createMoveListRemove() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let hierarchy = try CgroupHierarchy.system()
        let mountinfo = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        #expect(mountinfo.contains(" \(hierarchy.mountPoint) "))
        let parent = "vxtest-\(uniqueTag()).slice"
        let path = parent + "/vpn-work.slice"
        let id = try hierarchy.create(path)
        cleanup.add("remove cgroups") {
            try hierarchy.remove(path)
            try hierarchy.remove(parent)
        }
        #expect(hierarchy.id(of: path) == id)
        #expect(try hierarchy.create(path) == id, "create is idempotent")
        #expect(hierarchy.children(of: parent) == ["vpn-work.slice"])

        let sleeper = try BackgroundProcess(["sleep", "30"], cleanup: cleanup)
        let before = CgroupHierarchy.cgroup(ofProcess: sleeper.pid)
        try hierarchy.move(pid: sleeper.pid, to: path)
        #expect(CgroupHierarchy.cgroup(ofProcess: sleeper.pid) == path)
        #expect(hierarchy.processes(in: parent) == [sleeper.pid])
        #expect(throws: CgroupError.self) { try hierarchy.remove(path) }
        if let before { try hierarchy.move(pid: sleeper.pid, to: before) }
        sleeper.stop()
        #expect(hierarchy.processes(in: parent).isEmpty)
    }
}

/// The watcher's contract with vpnd: a tree made at once (`mkdir -p`, as systemd makes a
/// user's slices) sends one event, for its top; `rewatch` then says new directories got
/// watches, so vpnd reads again and finds what was made inside before the watches.
@Suite struct CgroupWatcherTests {
    @Test func aTreeMadeAtOnceIsReportedByRewatch() throws {
        let root = NSTemporaryDirectory() + "vx-\(uniqueTag())-watch"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directories = { () -> [String] in
            var found = [root], index = 0
            while index < found.count {
                let children = (try? FileManager.default.contentsOfDirectory(atPath: found[index])) ?? []
                found += children.map { found[index] + "/" + $0 }
                index += 1
            }
            return found
        }
        let watcher = try CgroupWatcher(paths: directories())
        #expect(!watcher.rewatch(directories()), "nothing new")
        try FileManager.default.createDirectory(atPath: root + "/a/b/c", withIntermediateDirectories: true)
        #expect(watcher.drain(), "the top of the new tree")
        #expect(watcher.rewatch(directories()), "a, a/b and a/b/c got their first watches")
        #expect(!watcher.rewatch(directories()))
        #expect(!watcher.drain())
        // The deepest directory is watched now.
        try FileManager.default.createDirectory(atPath: root + "/a/b/c/d", withIntermediateDirectories: false)
        #expect(watcher.drain())
    }
}
