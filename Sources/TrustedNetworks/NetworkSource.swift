import Addresses
import Facts

/// Where trusted networks read the host's networks from: NetworkFactsReader on this machine
/// (the main table's default route, its gateway's neighbour entry, resolv.conf, the SSID),
/// networks a test sets.
public protocol NetworkSource {
    func read() -> NetworkFacts
}

extension NetworkFactsReader: NetworkSource {}
