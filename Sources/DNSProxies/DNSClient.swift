import Addresses
import Descriptors

/// Who asked the proxy: a UDP client (by the socket it wrote to and its address) or a TCP
/// connection.
enum DNSClient: Hashable {
    /// `asked`: the address a steered query was sent to, which its answer comes from.
    case udp(socket: DescriptorNumber, from: Endpoint, asked: IPAddress? = nil)
    case tcp(connection: DescriptorNumber)
    /// A lookup of a member's that came over resolved's varlink interface (NameServer).
    case local(Int)
}
