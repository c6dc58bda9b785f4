import Addresses
import BPF
import CLinux
import Testing
@testable import SocketPrograms

/// The DNS steering program's pure side: a profile's key and its source address, the key
/// the program derives from what the kernel hands it, and the numbers it was written with
/// against the uapi header they come from.
@Suite struct DNSSteeringSchemeTests {
    @Test func keysAndAddressesNameEachOther() {
        #expect(DNSSteering.address(of: 1) == IPAddress("127.77.0.1"))
        #expect(DNSSteering.address(of: 0x0102) == IPAddress("127.77.1.2"))
        #expect(DNSSteering.address(of: 65534) == IPAddress("127.77.255.254"))
        for key in DNSSteering.keys {
            let address = DNSSteering.address(of: key)
            guard DNSSteering.key(of: address) == key, DNSSteering.prefix.contains(address) else {
                Issue.record("key \(key) -> \(address) -> \(String(describing: DNSSteering.key(of: address)))")
                return
            }
        }
        #expect(DNSSteering.address(of: 0x0102, ipv6: true) == IPAddress("fd7f:4d::102"))
        #expect(DNSSteering.address(of: 65534, ipv6: true) == IPAddress("fd7f:4d::fffe"))
        for key in DNSSteering.keys {
            let address = DNSSteering.address(of: key, ipv6: true)
            guard DNSSteering.key(of: address) == key, DNSSteering.prefix6.contains(address) else {
                Issue.record("key \(key) -> \(address) -> \(String(describing: DNSSteering.key(of: address)))")
                return
            }
        }
        for text in ["127.77.0.0", "127.77.255.255", "127.78.0.1", "127.76.255.254", "127.0.0.1", "192.0.2.53", "2001:db8::5",
                     "fd7f:4d::", "fd7f:4d::ffff", "fd7f:4d::1:5", "fd7f:4e::5", "fd7f:4d:0:1::5", "::ffff:127.77.0.5"] {
            #expect(DNSSteering.key(of: IPAddress(text)!) == nil, "\(text) names no profile")
        }
        #expect(DNSSteering.prefix.description == "127.77.0.0/16")
        #expect(DNSSteering.prefix6.description == "fd7f:4d::/112")
    }

    /// `remote_ip4` as the program loads it: the address's bytes in network order, read as
    /// one u32 of this machine.
    @Test func theProgramsKeyIsTheProfilesKey() {
        let read = { (address: IPAddress) -> UInt32 in address.bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } }
        for key in DNSSteering.keys {
            guard DNSSteering.mapKey(remoteIPv4: read(DNSSteering.address(of: key))) == key else {
                Issue.record("key \(key) from \(DNSSteering.address(of: key))")
                return
            }
        }
        #expect(DNSSteering.mapKey(remoteIPv4: read(IPAddress("127.77.0.0")!)) == 0, "ours, and no socket is ever at 0: dropped")
        #expect(DNSSteering.mapKey(remoteIPv4: read(IPAddress("127.78.0.5")!)) == nil)
        #expect(DNSSteering.mapKey(remoteIPv4: read(IPAddress("5.0.77.127")!)) == nil, "the bytes reversed are not ours")
        #expect(read(IPAddress("127.77.1.2")!) == 0x0201_4d7f, "a little-endian machine")
    }

    /// `remote_ip6` as the program loads it: four such words.
    @Test func theProgramsIPv6KeyIsTheProfilesKey() {
        let words = { (address: IPAddress) -> [UInt32] in
            address.bytes.withUnsafeBytes { bytes in (0..<4).map { bytes.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self) } }
        }
        for key in DNSSteering.keys {
            guard DNSSteering.mapKey(remoteIPv6: words(DNSSteering.address(of: key, ipv6: true))) == key else {
                Issue.record("key \(key) from \(DNSSteering.address(of: key, ipv6: true))")
                return
            }
        }
        #expect(DNSSteering.mapKey(remoteIPv6: words(IPAddress("fd7f:4d::")!)) == 0, "ours, and no socket is ever at 0: dropped")
        #expect(DNSSteering.mapKey(remoteIPv6: words(IPAddress("fd7f:4d::ffff")!)) == 0xffff, "ours, and beyond the map: dropped")
        for text in ["fd7f:4d::1:5", "fd7f:4e::5", "fd7f:4d:0:1::5", "::ffff:127.77.0.5", "2001:db8::53"] {
            #expect(DNSSteering.mapKey(remoteIPv6: words(IPAddress(text)!)) == nil, "\(text) is not ours")
        }
        #expect(DNSSteering.network6Words == [0x4d00_7ffd, 0, 0], "fd 7f 00 4d, read on a little-endian machine")
    }

    @Test func numbersAsTheHeaderHasThem() {
        typealias Context = DNSSteering.Context
        #expect(Context.family == VX_SK_LOOKUP_FAMILY)
        #expect(Context.ipProtocol == VX_SK_LOOKUP_PROTOCOL)
        #expect(Context.remoteIPv4 == VX_SK_LOOKUP_REMOTE_IP4)
        #expect(Context.remoteIPv6 == VX_SK_LOOKUP_REMOTE_IP6)
        #expect(Context.localPort == VX_SK_LOOKUP_LOCAL_PORT)
        #expect(DNSSteering.programType == BPF_PROG_TYPE_SK_LOOKUP.rawValue)
        #expect(DNSSteering.attachType == BPF_SK_LOOKUP.rawValue)
        #expect(DNSSteering.mapType == BPF_MAP_TYPE_SOCKMAP.rawValue)
        #expect(BPFHelper.socketAssign.rawValue == Int32(BPF_FUNC_sk_assign.rawValue))
        #expect(BPFHelper.socketRelease.rawValue == Int32(BPF_FUNC_sk_release.rawValue))
        #expect(DNSSteering.pass == Int32(SK_PASS.rawValue) && DNSSteering.drop == Int32(SK_DROP.rawValue))
    }

    @Test func shiftAndByteOrderInstructions() throws {
        var code = BPFAssembler()
        code.shiftRight(.r2, 16)
        code.fromNetworkOrder(.r1, bits: 32)
        let program = try code.assemble()
        #expect(program == [
            BPFInstruction(code: UInt8(BPF_ALU64 | BPF_RSH | BPF_K), destination: .r2, immediate: 16),
            BPFInstruction(code: UInt8(BPF_ALU | BPF_END | BPF_TO_BE), destination: .r1, immediate: 32),
        ])
    }
}
