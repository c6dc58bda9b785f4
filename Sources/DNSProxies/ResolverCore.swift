import DNS
import Monotonic

/// One profile's proxy and what its actions come to, at the time it is given: forwards and
/// replies for its edge, and each round's learned addresses into their sets (SetFiller)
/// before the replies that carry them, or those replies SERVFAIL if the kernel refused
/// them. A forward the kernel refuses at once goes back to the proxy, which tries the next
/// server or answers SERVFAIL in the same round.
final class ResolverCore {
    let profile: String
    private(set) var proxy: DNSProxy<DNSClient>
    private let filler: SetFiller
    private var actions: [DNSProxyAction<DNSClient>] = []

    init(profile: String, configuration: DNSProxyConfiguration, random: some RandomNumberGenerator, filler: SetFiller) throws {
        self.profile = profile
        self.filler = filler
        proxy = try DNSProxy(configuration: configuration, random: random)
    }

    func query(_ bytes: [UInt8], from client: DNSClient, over transport: DNSTransport, now: MonotonicInstant) {
        proxy.query(bytes, from: client, over: transport, now: now, into: &actions)
    }

    func upstreamAnswer(_ bytes: [UInt8], from server: DNSServer, now: MonotonicInstant) {
        proxy.upstreamAnswer(bytes, from: server, now: now, into: &actions)
    }

    /// A query the edge did not take (another mark), counted with the proxy's drops.
    func dropForeignQuery() { proxy.dropForeignQuery() }

    /// Time passing: a query whose server let it time out goes to the next, or is answered
    /// SERVFAIL when every try is used.
    func tick(now: MonotonicInstant) { proxy.tick(now: now, into: &actions) }

    /// Carries out what the proxy decided until nothing is left; returns when it next has
    /// work (the earliest upstream timeout of a query in flight), nil when none is. The fills
    /// of a burst go to the kernel in one batch; their replies follow its acknowledgement.
    func perform(now: MonotonicInstant, edge: some ResolverEdge) -> MonotonicInstant? {
        while !actions.isEmpty {
            let pending = actions
            actions.removeAll(keepingCapacity: true)
            var forwards: [(query: [UInt8], server: DNSServer)] = []
            var replies: [(response: [UInt8], client: DNSClient)] = []
            var fills: [DNSSetElement] = []
            var filled: [(response: [UInt8], client: DNSClient)] = []
            for action in pending {
                switch action {
                case let .forward(query, server, .udp):
                    forwards.append((query, server))
                case let .forward(query, server, .tcp):
                    if !edge.forwardOverTCP(query, to: server) { proxy.forwardFailed(query, now: now, into: &actions) }
                case let .reply(response, client, _):
                    replies.append((response, client))
                case let .fillThenReply(elements, response, client, _):
                    fills += elements
                    filled.append((response, client))
                }
            }
            if !forwards.isEmpty {
                for refused in edge.sendForwards(forwards) { proxy.forwardFailed(refused, now: now, into: &actions) }
            }
            if !filled.isEmpty {
                let accepted = filler.fill(fills, of: profile, now: now)
                replies += filled.map { (accepted ? $0.response : DNSErrorReply.make(answering: $0.response, code: .serverFailure) ?? [], $0.client) }
            }
            if !replies.isEmpty { edge.deliver(replies) }
        }
        return proxy.nextDeadline()
    }
}
