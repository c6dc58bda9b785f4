import Control
import Names

/// A profile's names (members' lookups through resolved's varlink socket) as `vpnctl status`
/// shows them.
extension NamesStatus {
    /// Not followed on this host (`failure`: the kernel lacks the programs), else what the
    /// profile's names server at `socket` answered (`counters`); nil: it has none.
    public init?(failure: String?, socket: String?, counters: NameServer.Counters?) {
        if let failure {
            self.init(socket: nil, failure: failure)
            return
        }
        guard let socket, let counters else { return nil }
        self.init(socket: socket)
        (calls, answered, errors, refused) = (counters.calls, counters.answered, counters.errors, counters.refused)
    }
}
