import Glibc

/// Why a tunnel file's `Endpoint = host:port` gave no address, with the file and line
/// that wrote it: the resolver's own code (getaddrinfo's, not an errno) kept until shown.
public enum EndpointError: Error, CustomStringConvertible, Equatable {
    /// getaddrinfo failed with `code` (EAI_NONAME, EAI_AGAIN...).
    case unresolvable(host: String, file: String, line: Int, code: Int32)
    /// The name resolved, to no IPv4 or IPv6 address.
    case noAddress(host: String, file: String, line: Int)

    public var description: String {
        switch self {
        case let .unresolvable(host, file, line, code):
            "\(file):\(line): cannot resolve Endpoint host \(host): \(String(cString: gai_strerror(code)))"
        case let .noAddress(host, file, line):
            "\(file):\(line): \(host) has no IPv4 or IPv6 address"
        }
    }
}
