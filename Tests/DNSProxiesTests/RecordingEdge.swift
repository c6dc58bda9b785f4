import Applying
import DNS
@testable import DNSProxies

/// A resolver's edge as a record: what it was asked to send and deliver, and how many
/// element batches the applier had taken when each reply was delivered. It refuses what a
/// test makes the kernel refuse: forwards to some servers, every TCP connection.
final class RecordingEdge: ResolverEdge {
    let applier: FakeKernelApplier
    var refusing: Set<DNSServer> = []
    var refusingTCP = false
    private(set) var forwards: [(query: [UInt8], server: DNSServer)] = []
    private(set) var tcpForwards: [(query: [UInt8], server: DNSServer)] = []
    private(set) var replies: [(response: [UInt8], client: DNSClient)] = []
    private(set) var batchesAtDelivery: [Int] = []

    init(applier: FakeKernelApplier) { self.applier = applier }

    func sendForwards(_ forwards: [(query: [UInt8], server: DNSServer)]) -> [[UInt8]] {
        self.forwards += forwards
        return forwards.filter { refusing.contains($0.server) }.map(\.query)
    }

    func forwardOverTCP(_ query: [UInt8], to server: DNSServer) -> Bool {
        tcpForwards.append((query, server))
        return !refusingTCP
    }

    func deliver(_ replies: [(response: [UInt8], client: DNSClient)]) {
        self.replies += replies
        batchesAtDelivery += replies.map { _ in applier.elementBatches.count }
    }
}
