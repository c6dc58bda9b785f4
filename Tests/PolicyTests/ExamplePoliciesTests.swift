import Foundation
import Policy
import Testing

/// The commented examples in policies/ are what admins copy: they must stay valid.
@Suite struct ExamplePoliciesTests {
    /// Any name resolves: the examples name users and groups of an imagined host.
    struct AnyName: NameResolver {
        func uid(ofUser name: String) -> UInt32? { 5000 }
        func gid(ofGroup name: String) -> UInt32? { 6000 }
    }

    @Test func examplesParse() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../policies").standardized.path
        // Read plainly: this is about their content; where the checkout lives is not
        // root's trusted ground (TrustedFilesTests covers that).
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".toml") }.sorted()
        let sources = try names.map { PolicySource(path: directory + "/" + $0, text: try String(contentsOfFile: directory + "/" + $0, encoding: .utf8)) }
        #expect(sources.map { URL(fileURLWithPath: $0.path).lastPathComponent } == ["00-routing.toml", "10-work.toml", "20-streaming.toml", "30-travel.toml", "40-system.toml"])
        let policy = try Policy.parse(sources, resolver: AnyName())
        #expect(policy.profiles.map(\.name) == ["work", "streaming", "travel"])
        let travel = try #require(policy.profile(named: "travel"))
        #expect(travel.tunnel.isBuiltIn && travel.tunnel.interfaceName == "vx-travel" && travel.tunnel.location?.line == 11)
        #expect(travel.trusted.map(\.action) == [.disconnect, .block])
        #expect(policy.profile(named: "streaming")?.killswitch == false)
        #expect(policy.profiles.allSatisfy { $0.dnsServers.isEmpty }, "no example sets dns: each resolves through its tunnel's own resolvers")
        #expect(policy.routing.markMask == 0x7f00_0000)
        #expect(policy.systemProfile == nil && policy.system.bypass?.groups.map(\.name) == ["vpn-bypass"], "system mode stays an admin's explicit choice")
    }
}
