import Addresses
import Glibc
import Testing

@Suite struct EndpointSockaddrTests {
    /// The bytes `store` wrote, and its length.
    static func stored(_ endpoint: Endpoint, mappingIPv4: Bool = false) -> (bytes: [UInt8], length: socklen_t) {
        var storage = [UInt8](repeating: 0xa5, count: Endpoint.sockaddrCapacity)
        let length = storage.withUnsafeMutableBytes { endpoint.store(into: $0.baseAddress!, mappingIPv4: mappingIPv4) }
        return (Array(storage.prefix(Int(length))), length)
    }

    static func read(_ bytes: [UInt8], length: Int? = nil) throws(SockaddrError) -> Endpoint {
        // Copied into aligned storage, as the kernel's are.
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes.prefix($0.count)) }
        return try Endpoint(sockaddr: &storage, length: socklen_t(length ?? bytes.count))
    }

    @Test func anIPv4EndpointIsASockaddrInInNetworkOrder() throws {
        let endpoint = Endpoint(address: IPAddress("192.0.2.1")!, port: 0x1234)
        let (bytes, length) = Self.stored(endpoint)
        #expect(Int(length) == MemoryLayout<sockaddr_in>.size)
        #expect(bytes.withUnsafeBytes { Int32($0.loadUnaligned(as: sa_family_t.self)) } == AF_INET)
        #expect(Array(bytes[2..<8]) == [0x12, 0x34, 192, 0, 2, 1])
        #expect(bytes[8...].allSatisfy { $0 == 0 })
        #expect(try Self.read(bytes) == endpoint)
    }

    @Test func anIPv6EndpointKeepsItsScope() throws {
        let endpoint = Endpoint(address: IPAddress("fe80::1:2")!, port: 51820, scopeID: 7)
        let (bytes, length) = Self.stored(endpoint)
        #expect(Int(length) == MemoryLayout<sockaddr_in6>.size)
        let sin6 = bytes.withUnsafeBytes { $0.loadUnaligned(as: sockaddr_in6.self) }
        #expect(Int32(sin6.sin6_family) == AF_INET6)
        #expect(UInt16(bigEndian: sin6.sin6_port) == 51820)
        #expect(sin6.sin6_scope_id == 7)
        #expect(sin6.sin6_flowinfo == 0)
        #expect(withUnsafeBytes(of: sin6.sin6_addr) { Array($0) } == IPAddress("fe80::1:2")!.bytes)
        let read = try Self.read(bytes)
        #expect(read == endpoint)
        #expect(read.scopeID == 7)
        #expect(read.description == "[fe80::1:2%7]:51820")
        #expect(Endpoint(address: IPAddress("fe80::1:2")!, port: 53).description == "[fe80::1:2]:53")
    }

    @Test func anIPv4EndpointHasNoScope() {
        let endpoint = Endpoint(address: IPAddress("192.0.2.1")!, port: 53, scopeID: 3)
        #expect(endpoint.scopeID == 0)
        #expect(endpoint.description == "192.0.2.1:53")
    }

    @Test func aDualStackSocketsIPv4IsMappedAndUnmappedBack() throws {
        let endpoint = Endpoint(address: IPAddress("192.0.2.1")!, port: 443)
        let (bytes, length) = Self.stored(endpoint, mappingIPv4: true)
        #expect(Int(length) == MemoryLayout<sockaddr_in6>.size)
        let read = try Self.read(bytes)
        #expect(read == Endpoint(address: IPAddress("::ffff:192.0.2.1")!, port: 443))
        #expect(read.unmapped == endpoint)
        let v6 = Endpoint(address: IPAddress("2001:db8::ffff:c000:201")!, port: 443)
        #expect(v6.unmapped == v6)
        // IPv6 is written the same either way.
        #expect(Self.stored(v6, mappingIPv4: true).bytes == Self.stored(v6).bytes)
    }

    @Test func anAddressOfAnotherFamilyOrTooShortIsRefused() throws {
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        let unixBytes = withUnsafeBytes(of: unix) { Array($0) }
        #expect(throws: SockaddrError.family(AF_UNIX)) { try Self.read(unixBytes) }
        #expect(throws: SockaddrError.family(AF_UNSPEC)) { try Self.read([UInt8](repeating: 0, count: 16)) }
        let v4 = Self.stored(Endpoint(address: .v4(1), port: 1)).bytes
        #expect(throws: SockaddrError.length(15, family: AF_INET)) { try Self.read(v4, length: 15) }
        let v6 = Self.stored(Endpoint(address: .v6(1, 1), port: 1)).bytes
        #expect(throws: SockaddrError.length(27, family: AF_INET6)) { try Self.read(v6, length: 27) }
        #expect(throws: SockaddrError.length(1, family: nil)) { try Self.read(v6, length: 1) }
        #expect(throws: SockaddrError.length(0, family: nil)) { try Self.read(v6, length: 0) }
        // Longer than the structure (a sockaddr_storage's whole length) is fine.
        #expect(try Self.read(v6, length: MemoryLayout<sockaddr_storage>.size) == Endpoint(address: .v6(1, 1), port: 1))
    }

    /// SplitMix64: the same endpoints every run, so that a failure can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
    }

    @Test func everyEndpointRoundTripsBothWays() throws {
        var random = Generator(state: 41)
        for _ in 0..<5000 {
            let address: IPAddress = Bool.random(using: &random)
                ? .v4(UInt32.random(in: .min ... .max, using: &random))
                : .v6(UInt64.random(in: .min ... .max, using: &random), UInt64.random(in: .min ... .max, using: &random))
            let scope = Bool.random(using: &random) ? UInt32.random(in: .min ... .max, using: &random) : 0
            let endpoint = Endpoint(address: address, port: UInt16.random(in: .min ... .max, using: &random), scopeID: scope)
            #expect(try Self.read(Self.stored(endpoint).bytes) == endpoint, "\(endpoint)")
            #expect(try Self.read(Self.stored(endpoint, mappingIPv4: true).bytes).unmapped == endpoint.unmapped, "\(endpoint)")
            let viaClosure = endpoint.withSockaddr { pointer, length in
                UnsafeRawBufferPointer(start: pointer, count: Int(length)).map { $0 }
            }
            #expect(viaClosure == Self.stored(endpoint).bytes)
        }
    }

    /// Through the kernel: bound by `withSockaddr`, named by getsockname, a datagram's
    /// sender read from what recvfrom filled.
    @Test(arguments: ["127.0.0.1", "::1"])
    func theKernelTakesAndGivesTheSameAddresses(_ loopback: String) throws {
        let address = try #require(IPAddress(loopback))
        let family = address.isIPv4 ? AF_INET : AF_INET6
        let receiver = socket(family, Int32(SOCK_DGRAM.rawValue), 0), sender = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver); close(sender) }
        try #require(receiver >= 0 && sender >= 0)
        let any = Endpoint(address: address, port: 0)
        try #require(any.withSockaddr { bind(receiver, $0, $1) } == 0, "bind: \(errno)")
        try #require(any.withSockaddr { bind(sender, $0, $1) } == 0, "bind: \(errno)")
        let to = try #require(Endpoint.local(of: receiver))
        let from = try #require(Endpoint.local(of: sender))
        #expect(to.address == address && to.port != 0)
        let byte: [UInt8] = [42]
        #expect(to.withSockaddr { sendto(sender, byte, 1, 0, $0, $1) } == 1)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var buffer = [UInt8](repeating: 0, count: 4)
        let count = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(receiver, &buffer, buffer.count, 0, $0, &length) }
        }
        #expect(count == 1)
        #expect(try Endpoint(sockaddr: &storage, length: length) == from)
    }

    @Test func aUnixSocketHasNoEndpoint() {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        #expect(fd >= 0)
        #expect(Endpoint.local(of: fd) == nil)
        #expect(Endpoint.local(of: -1) == nil)
    }
}
