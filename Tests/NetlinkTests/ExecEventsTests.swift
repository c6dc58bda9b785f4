import Foundation
import Netlink
import NetTestSupport
import Testing

/// The process connector reports every exec, with the process's pid.
@Suite(.serialized) struct ExecEventsTests {
    @Test func everyExecIsReported() throws {
        try requireRoot()
        let events = try ExecEvents()
        var started: Set<Int32> = []
        for _ in 0..<5 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.run()
            started.insert(process.processIdentifier)
            process.waitUntilExit()
        }
        var seen: Set<Int32> = []
        try eventually("the exec events of the five processes") {
            seen.formUnion(events.drain().pids)
            return started.isSubset(of: seen)
        }
    }
}
