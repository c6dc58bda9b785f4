import Addresses
import Glibc
import WireGuard

/// Turns a file's `Endpoint = host:port` into an address, once, at start (as wg-quick does);
/// roaming then follows the peer wherever it authenticates from.
public enum EndpointResolver {
    public static func resolve(_ spec: WgQuickConfig.EndpointSpec, file: String, line: Int) throws(EndpointError) -> Endpoint {
        switch spec.host {
        case let .address(address):
            return Endpoint(address: address, port: spec.port)
        case let .name(name):
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            let rc = getaddrinfo(name, nil, &hints, &result)
            guard rc == 0, let first = result else {
                throw .unresolvable(host: name, file: file, line: line, code: rc)
            }
            defer { freeaddrinfo(result) }
            // Prefer IPv4 like wg does when both exist: it is what most providers' servers answer on.
            var chosen: Endpoint?
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let e = entry {
                if let raw = e.pointee.ai_addr, let address = (try? Endpoint(sockaddr: raw, length: e.pointee.ai_addrlen))?.unmapped {
                    if chosen == nil || (address.address.isIPv4 && !(chosen!.address.isIPv4)) { chosen = address }
                }
                entry = e.pointee.ai_next
            }
            guard var found = chosen else { throw .noAddress(host: name, file: file, line: line) }
            found.port = spec.port
            return found
        }
    }
}
