import CNetlink
import Glibc
import Routing

/// Other network namespaces, as this one numbers them (its namespace ids, `ip netns
/// list-id`): where a veth's peer lives, and what interfaces a namespace has. The ids are
/// the kernel's, given out as a dump of our links names a peer's namespace; a namespace no
/// link of ours reaches has none (and is no concern of the host's routing).
extension Rtnetlink {
    /// RTM_GETNSID and its attributes (linux/net_namespace.h, which glibc's headers lack).
    private static let getNamespaceID: UInt16 = 90, newNamespaceID: UInt16 = 88
    private static let namespaceIDAttribute: UInt16 = 1, processAttribute: UInt16 = 2, fileAttribute: UInt16 = 3
    /// IFLA_TARGET_NETNSID: a request about the interfaces of another namespace.
    private static let targetNamespace: UInt16 = 46

    /// The id this namespace gives the network namespace of process `pid`, given one now if
    /// it had none (CAP_NET_ADMIN: a namespace no link of ours reaches, a macvlan's, has none
    /// until asked for); nil where the process is gone.
    public func namespaceID(ofProcess pid: Int32) throws -> Int32? {
        if let id = try assignedNamespaceID(ofProcess: pid) { return id }
        let message = NetlinkMessage(type: Self.newNamespaceID, flags: 0)
        message.putFamilyHeader(rtgenmsg(rtgen_family: UInt8(AF_UNSPEC)))
        message.put(Self.namespaceIDAttribute, u32: UInt32(bitPattern: -1))
        message.put(Self.processAttribute, u32: UInt32(bitPattern: pid))
        do {
            try netlink.perform(message, operation: "give the network namespace of process \(pid) an id")
        } catch let error as NetlinkError where error.code == ESRCH || error.code == EEXIST {
            // Gone, or given one meanwhile.
        }
        return try assignedNamespaceID(ofProcess: pid)
    }

    /// The id this namespace gives the network namespace of process `pid`, if it has one
    /// (asking gives none): nil for this namespace itself, for one no link of ours reaches
    /// and nobody asked about, and where the process is gone.
    public func assignedNamespaceID(ofProcess pid: Int32) throws -> Int32? {
        let message = NetlinkMessage(type: Self.getNamespaceID, flags: 0)
        message.putFamilyHeader(rtgenmsg(rtgen_family: UInt8(AF_UNSPEC)))
        message.put(Self.processAttribute, u32: UInt32(bitPattern: pid))
        let replies: [NetlinkReply]
        do {
            replies = try netlink.request(message, operation: "get the network namespace id of process \(pid)")
        } catch let error as NetlinkError where error.code == ESRCH {
            return nil
        }
        for reply in replies where reply.type == Self.newNamespaceID {
            let attributes = reply.attributes(familyHeaderSize: 4)
            if let id = attributes.u32(Self.namespaceIDAttribute).map({ Int32(bitPattern: $0) }), id >= 0 { return id }
        }
        return nil
    }

    /// The id this namespace gives the network namespace `descriptor` refers to (an open
    /// namespace file: /proc/PID/ns/net, a bind mount of it), if it has one (asking gives
    /// none); nil for this namespace itself and one nobody numbered. Throws for a file that
    /// is no network namespace's (EINVAL: an empty file where the bind mount is another
    /// mount namespace's).
    public func assignedNamespaceID(ofFile descriptor: Int32) throws -> Int32? {
        let message = NetlinkMessage(type: Self.getNamespaceID, flags: 0)
        message.putFamilyHeader(rtgenmsg(rtgen_family: UInt8(AF_UNSPEC)))
        message.put(Self.fileAttribute, u32: UInt32(bitPattern: descriptor))
        let replies = try netlink.request(message, operation: "get the network namespace id of a namespace file")
        for reply in replies where reply.type == Self.newNamespaceID {
            let attributes = reply.attributes(familyHeaderSize: 4)
            if let id = attributes.u32(Self.namespaceIDAttribute).map({ Int32(bitPattern: $0) }), id >= 0 { return id }
        }
        return nil
    }

    /// The interfaces of the namespace with id `namespace` (CAP_NET_ADMIN over it).
    public func links(inNamespace namespace: Int32) throws -> [Link] {
        let message = NetlinkMessage(type: UInt16(RTM_GETLINK), flags: 0)
        message.putFamilyHeader(ifinfomsg())
        message.put(Self.targetNamespace, u32: UInt32(bitPattern: namespace))
        return try netlink.dump(message, operation: "list the links of network namespace \(namespace)").compactMap(Self.decodeLink)
    }

    /// The addresses of the namespace with id `namespace`, as its links hold them. The kernel
    /// reads IFA_TARGET_NETNSID only from a socket with strict checking, which this one has.
    public func addresses(inNamespace namespace: Int32) throws -> [InterfaceAddress] {
        let message = NetlinkMessage(type: UInt16(RTM_GETADDR), flags: 0)
        message.putFamilyHeader(ifaddrmsg())
        message.put(UInt16(cint(IFA_TARGET_NETNSID)), u32: UInt32(bitPattern: namespace))
        return try netlink.dump(message, operation: "list the addresses of network namespace \(namespace)").compactMap(Self.decodeAddress)
    }
}
