import CNetlink
import Nftables

/// Each statement as the kernel's expression list (what `nft --debug=netlink` prints for
/// the same text). Register 1 is the only scratch register a statement needs.
enum NftExpressions {
    private static let reg1 = UInt32(NFT_REG_1.rawValue)
    private static let verdictRegister = UInt32(NFT_REG_VERDICT.rawValue)

    static func encode(_ statement: NftStatement) -> [OpaquePointer] {
        switch statement {
        case let .markMatch(mask, value, negated):
            return [loadMeta(NFT_META_MARK), bitwise(and: mask, xor: 0), compare(value.bytes, negated: negated)]
        case let .outputInterfaceName(name, negated):
            return [loadMeta(NFT_META_OIFNAME), compare(NftElementKey.interface(name).bytes, negated: negated)]
        case let .outputInterface(_, index):
            return [loadMeta(NFT_META_OIF), compare(withUnsafeBytes(of: index) { Array($0) }, negated: false)]
        case let .inputInterfaceName(name, negated):
            return [loadMeta(NFT_META_IIFNAME), compare(NftElementKey.interface(name).bytes, negated: negated)]
        case let .inputInterface(_, index):
            return [loadMeta(NFT_META_IIF), compare(withUnsafeBytes(of: index) { Array($0) }, negated: false)]
        case let .inputInterfaceVerdictMap(map):
            return [loadMeta(NFT_META_IIFNAME), verdictLookup(map)]
        case let .outputInterfaceVerdictMap(map):
            return [loadMeta(NFT_META_OIFNAME), verdictLookup(map)]
        case let .namedCounter(name):
            let e = expression("objref")
            nftnl_expr_set_u32(e, attr(NFTNL_EXPR_OBJREF_IMM_TYPE), UInt32(NFT_OBJECT_COUNTER))
            nftnl_expr_set_str(e, attr(NFTNL_EXPR_OBJREF_IMM_NAME), name)
            return [e]
        case let .cgroupVerdictMap(level, map):
            return [loadSocketCgroup(level: level), verdictLookup(map)]
        case let .destinationInSet(ipv4, set, negated):
            return loadAddress(source: false, ipv4: ipv4) + [setLookup(set, negated: negated)]
        case let .sourceInSet(ipv4, set, negated):
            return loadAddress(source: true, ipv4: ipv4) + [setLookup(set, negated: negated)]
        case let .sourceVerdictMap(ipv4, map):
            return loadAddress(source: true, ipv4: ipv4) + [verdictLookup(map)]
        case let .sourceAddress(address):
            return loadAddress(source: true, ipv4: address.isIPv4) + [compare(address.bytes, negated: false)]
        case let .sourceNetwork(prefix):
            // As nft encodes it: a prefix of whole bytes loads and compares those bytes only;
            // another, the whole address under a mask.
            let address = prefix.network.address.bytes
            guard prefix.length % 8 != 0 else {
                let count = prefix.length / 8
                return loadAddress(source: true, ipv4: prefix.isIPv4, length: UInt32(count)) + [compare(Array(address.prefix(count)), negated: false)]
            }
            let mask = address.indices.map { UInt8(truncatingIfNeeded: 0xff00 >> min(max(prefix.length - $0 * 8, 0), 8)) }
            return loadAddress(source: true, ipv4: prefix.isIPv4)
                + [bitwise(and: mask, xor: [UInt8](repeating: 0, count: mask.count)), compare(address, negated: false)]
        case let .sourcePortVerdictMap(transport, map):
            return [loadMeta(NFT_META_L4PROTO), compare([transport.number], negated: false),
                    loadTransport(offset: 0, length: 2), verdictLookup(map)]
        case let .markVerdictMap(mask, map):
            return [loadMeta(NFT_META_MARK), bitwise(and: mask, xor: 0), verdictLookup(map)]
        case let .socketMarkMatch(value, negated):
            let socket = expression("socket")
            nftnl_expr_set_u32(socket, attr(NFTNL_EXPR_SOCKET_KEY), UInt32(NFT_SOCKET_MARK.rawValue))
            nftnl_expr_set_u32(socket, attr(NFTNL_EXPR_SOCKET_DREG), reg1)
            return [socket, compare(value.bytes, negated: negated)]
        case let .transportProtocol(number):
            return [loadMeta(NFT_META_L4PROTO), compare([number], negated: false)]
        case let .tcpSynWithoutAck(negated):
            // Byte 13 of the TCP header holds the flags; of them only SYN (0x02) and ACK (0x10) count.
            return [loadMeta(NFT_META_L4PROTO), compare([NftTransport.tcp.number], negated: false),
                    loadTransport(offset: 13, length: 1), bitwise(and: [0x12], xor: [0]), compare([0x02], negated: negated)]
        case let .udpPorts(source, destination):
            // One load of both ports, as nft merges the two matches.
            return [loadMeta(NFT_META_L4PROTO), compare([NftTransport.udp.number], negated: false),
                    loadTransport(offset: 0, length: 4), compare(source.bigEndianBytes + destination.bigEndianBytes, negated: false)]
        case let .sourcePortInSet(transport, set):
            return [loadMeta(NFT_META_L4PROTO), compare([transport.number], negated: false),
                    loadTransport(offset: 0, length: 2), setLookup(set, negated: false)]
        case let .destinationPortInSet(transport, set):
            return [loadMeta(NFT_META_L4PROTO), compare([transport.number], negated: false),
                    loadTransport(offset: 2, length: 2), setLookup(set, negated: false)]
        case let .socketUserInSet(set):
            return [loadMeta(NFT_META_SKUID), setLookup(set, negated: false)]
        case let .icmpv6Types(types):
            var expressions = [loadMeta(NFT_META_NFPROTO), compare([10], negated: false),  // NFPROTO_IPV6
                               loadMeta(NFT_META_L4PROTO), compare([58], negated: false),  // IPPROTO_ICMPV6
                               loadTransport(offset: 0, length: 1)]
            if types.count == 1 {
                expressions.append(compare([types.lowerBound], negated: false))
            } else {
                expressions += [compare([types.lowerBound], operation: NFT_CMP_GTE), compare([types.upperBound], operation: NFT_CMP_LTE)]
            }
            return expressions
        case let .destinationPort(transport, port):
            return [loadMeta(NFT_META_L4PROTO), compare([transport.number], negated: false),
                    loadTransport(offset: 2, length: 2), compare(port.bigEndianBytes, negated: false)]
        case let .setMark(value):
            let set = expression("meta")
            nftnl_expr_set_u32(set, attr(NFTNL_EXPR_META_KEY), UInt32(NFT_META_MARK.rawValue))
            nftnl_expr_set_u32(set, attr(NFTNL_EXPR_META_SREG), reg1)
            return [immediate(value.bytes), set]
        case .masquerade:
            return [expression("masq")]
        case let .sourceNAT(address):
            // As nft encodes it in the inet family: the family first, then the address.
            let family: UInt32 = address.isIPv4 ? 2 : 10  // NFPROTO_IPV4, NFPROTO_IPV6
            let nat = expression("nat")
            nftnl_expr_set_u32(nat, attr(NFTNL_EXPR_NAT_TYPE), UInt32(NFT_NAT_SNAT.rawValue))
            nftnl_expr_set_u32(nat, attr(NFTNL_EXPR_NAT_FAMILY), family)
            nftnl_expr_set_u32(nat, attr(NFTNL_EXPR_NAT_REG_ADDR_MIN), reg1)
            return [loadMeta(NFT_META_NFPROTO), compare([UInt8(family)], negated: false), immediate(address.bytes), nat]
        case let .reject(tcpReset):
            // As nft encodes `reject` in the inet family: ICMPX port unreachable, which the
            // kernel sends as ICMP or ICMPv6 by the packet's family.
            let e = expression("reject")
            nftnl_expr_set_u32(e, attr(NFTNL_EXPR_REJECT_TYPE), UInt32(tcpReset ? NFT_REJECT_TCP_RST.rawValue : NFT_REJECT_ICMPX_UNREACH.rawValue))
            nftnl_expr_set_u8(e, attr(NFTNL_EXPR_REJECT_CODE), tcpReset ? 0 : UInt8(NFT_REJECT_ICMPX_PORT_UNREACH.rawValue))
            return [e]
        case .rejectNoRoute:
            let e = expression("reject")
            nftnl_expr_set_u32(e, attr(NFTNL_EXPR_REJECT_TYPE), UInt32(NFT_REJECT_ICMPX_UNREACH.rawValue))
            nftnl_expr_set_u8(e, attr(NFTNL_EXPR_REJECT_CODE), UInt8(NFT_REJECT_ICMPX_HOST_UNREACH.rawValue))
            return [e]
        case let .verdict(verdict):
            let e = expression("immediate")
            nftnl_expr_set_u32(e, attr(NFTNL_EXPR_IMM_DREG), verdictRegister)
            nftnl_expr_set_u32(e, attr(NFTNL_EXPR_IMM_VERDICT), UInt32(bitPattern: verdictCode(verdict)))
            if let chain = chainName(verdict) {
                nftnl_expr_set_str(e, attr(NFTNL_EXPR_IMM_CHAIN), chain)
            }
            return [e]
        }
    }

    static func verdictCode(_ verdict: NftVerdict) -> Int32 {
        switch verdict {
        case .accept: return NF_ACCEPT
        case .drop: return NF_DROP
        case .return: return NFT_RETURN.rawValue
        case .jump: return NFT_JUMP.rawValue
        case .goto: return NFT_GOTO.rawValue
        }
    }

    /// The verdict of a map element read from the kernel; nil for a code we do not write.
    static func verdict(code: Int32, chain: String?) -> NftVerdict? {
        switch code {
        case NF_ACCEPT: return .accept
        case NF_DROP: return .drop
        case NFT_RETURN.rawValue: return .return
        case NFT_JUMP.rawValue: return chain.map(NftVerdict.jump)
        case NFT_GOTO.rawValue: return chain.map(NftVerdict.goto)
        default: return nil
        }
    }

    static func chainName(_ verdict: NftVerdict) -> String? {
        switch verdict {
        case let .jump(chain), let .goto(chain): return chain
        default: return nil
        }
    }

    private static func expression(_ name: String) -> OpaquePointer {
        nftnl_expr_alloc(name)!
    }

    /// In an inet table: only packets of the family, then their source or destination
    /// address into register 1 (network header offsets 12/16 for IPv4, 8/24 for IPv6).
    private static func loadAddress(source: Bool, ipv4: Bool, length: UInt32? = nil) -> [OpaquePointer] {
        let family: UInt8 = ipv4 ? 2 : 10  // NFPROTO_IPV4, NFPROTO_IPV6: one byte
        let payload = expression("payload")
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_DREG), reg1)
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_BASE), UInt32(NFT_PAYLOAD_NETWORK_HEADER.rawValue))
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_OFFSET), ipv4 ? (source ? 12 : 16) : (source ? 8 : 24))
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_LEN), length ?? (ipv4 ? 4 : 16))
        return [loadMeta(NFT_META_NFPROTO), compare([family], negated: false), payload]
    }

    private static func setLookup(_ set: String, negated: Bool) -> OpaquePointer {
        let lookup = expression("lookup")
        nftnl_expr_set_u32(lookup, attr(NFTNL_EXPR_LOOKUP_SREG), reg1)
        nftnl_expr_set_str(lookup, attr(NFTNL_EXPR_LOOKUP_SET), set)
        if negated { nftnl_expr_set_u32(lookup, attr(NFTNL_EXPR_LOOKUP_FLAGS), UInt32(NFT_LOOKUP_F_INV.rawValue)) }
        return lookup
    }

    /// The socket's cgroup v2 ancestor at `level` (its id, 8 bytes) into register 1.
    private static func loadSocketCgroup(level: UInt32) -> OpaquePointer {
        let socket = expression("socket")
        nftnl_expr_set_u32(socket, attr(NFTNL_EXPR_SOCKET_KEY), UInt32(NFT_SOCKET_CGROUPV2.rawValue))
        nftnl_expr_set_u32(socket, attr(NFTNL_EXPR_SOCKET_DREG), reg1)
        nftnl_expr_set_u32(socket, attr(NFTNL_EXPR_SOCKET_LEVEL), level)
        return socket
    }

    /// The packet's meta `key` into register 1.
    private static func loadMeta(_ key: nft_meta_keys) -> OpaquePointer {
        let e = expression("meta")
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_META_KEY), key.rawValue)
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_META_DREG), reg1)
        return e
    }

    /// reg1 = (reg1 & and) ^ xor, on a 32-bit value in host order (a mark).
    private static func bitwise(and: UInt32, xor: UInt32) -> OpaquePointer {
        bitwise(and: and.bytes, xor: xor.bytes)
    }

    /// reg1 = (reg1 & and) ^ xor over as many bytes as the masks hold: as many as were
    /// loaded, as nft encodes it (a flags byte is 1). A 4-byte mask on a 1-byte load would
    /// match the same packets and list the same, so only the expressions' bytes show it.
    private static func bitwise(and: [UInt8], xor: [UInt8]) -> OpaquePointer {
        precondition(and.count == xor.count, "bitwise masks of different lengths")
        let e = expression("bitwise")
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_BITWISE_SREG), reg1)
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_BITWISE_DREG), reg1)
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_BITWISE_LEN), UInt32(and.count))
        _ = and.withUnsafeBytes { nftnl_expr_set(e, attr(NFTNL_EXPR_BITWISE_MASK), $0.baseAddress, UInt32($0.count)) }
        _ = xor.withUnsafeBytes { nftnl_expr_set(e, attr(NFTNL_EXPR_BITWISE_XOR), $0.baseAddress, UInt32($0.count)) }
        return e
    }

    /// `length` bytes of the transport header at `offset` into register 1.
    private static func loadTransport(offset: UInt32, length: UInt32) -> OpaquePointer {
        let payload = expression("payload")
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_DREG), reg1)
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_BASE), UInt32(NFT_PAYLOAD_TRANSPORT_HEADER.rawValue))
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_OFFSET), offset)
        nftnl_expr_set_u32(payload, attr(NFTNL_EXPR_PAYLOAD_LEN), length)
        return payload
    }

    private static func compare(_ data: [UInt8], negated: Bool) -> OpaquePointer {
        compare(data, operation: negated ? NFT_CMP_NEQ : NFT_CMP_EQ)
    }

    private static func compare(_ data: [UInt8], operation: nft_cmp_ops) -> OpaquePointer {
        let e = expression("cmp")
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_CMP_SREG), reg1)
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_CMP_OP), operation.rawValue)
        _ = data.withUnsafeBytes { nftnl_expr_set(e, attr(NFTNL_EXPR_CMP_DATA), $0.baseAddress, UInt32($0.count)) }
        return e
    }

    /// `data` into register 1, for the statement after it to use.
    private static func immediate(_ data: [UInt8]) -> OpaquePointer {
        let e = expression("immediate")
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_IMM_DREG), reg1)
        _ = data.withUnsafeBytes { nftnl_expr_set(e, attr(NFTNL_EXPR_IMM_DATA), $0.baseAddress, UInt32($0.count)) }
        return e
    }

    private static func verdictLookup(_ map: String) -> OpaquePointer {
        let e = expression("lookup")
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_LOOKUP_SREG), reg1)
        nftnl_expr_set_u32(e, attr(NFTNL_EXPR_LOOKUP_DREG), verdictRegister)
        nftnl_expr_set_str(e, attr(NFTNL_EXPR_LOOKUP_SET), map)
        return e
    }
}

extension UInt32 {
    /// Host byte order, as the kernel keeps marks.
    var bytes: [UInt8] { withUnsafeBytes(of: self) { Array($0) } }
}

extension UInt16 {
    /// Network byte order, as ports are on the wire.
    var bigEndianBytes: [UInt8] { [UInt8(self >> 8), UInt8(self & 0xff)] }
}
