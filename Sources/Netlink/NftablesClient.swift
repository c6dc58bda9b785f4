import CNetlink
import Glibc
import Nftables

/// The nftables edge: replaces a whole table atomically, edits set elements, reads
/// counters. Everything goes through libnftnl batches on one netfilter socket.
public final class NftablesClient {
    private let netlink: NetlinkSocket

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_NETFILTER)
        netlink.setReceiveTimeout(seconds: 10)
    }

    /// Ensure, delete and re-create in one transaction: there is no instant in which the
    /// old table is gone and the new one not yet in place, and a refused batch leaves the
    /// old table exactly as it was.
    public func replace(_ table: NftTable) throws {
        try commit { batch in
            batch.ensureTable(table.family, table.name)
            batch.deleteTable(table.family, table.name)
            batch.createTable(table)
        }
    }

    /// Turns the table the kernel holds (`old`, as last applied) into `new` in one
    /// transaction, keeping what stays (see `NftTableUpdate`). Timeout sets and counters
    /// made anew get what the kernel held in them (elements with the time they had left).
    public func update(from old: NftTable, to new: NftTable) throws {
        var update = NftTableUpdate(from: old, to: new)
        // A counter made anew (its comment changed) starts where the old one was.
        if update.createdCounters.contains(where: { name in old.counters.contains { $0.name == name.name } }) {
            let current = try counters(family: new.family, table: new.name)
            for index in update.createdCounters.indices {
                if let held = current[update.createdCounters[index].name] {
                    update.createdCounters[index].packets = held.packets
                    update.createdCounters[index].bytes = held.bytes
                }
            }
        }
        var carried: [String: [NftElement]] = [:]
        for name in update.recreatedTimeoutSets {
            guard let set = new.set(named: name) else { continue }
            let held = Set(set.elements.map(\.key))
            carried[name] = try elements(of: name, keyType: set.key, family: new.family, table: new.name)
                .filter { !held.contains($0.key) && ($0.timeout ?? 0) > 0 }
        }
        try commit { $0.update(update, in: new, carried: carried) }
    }

    /// Removes the table if it exists.
    public func delete(family: NftFamily, table: String) throws {
        try commit { batch in
            batch.ensureTable(family, table)
            batch.deleteTable(family, table)
        }
    }

    public func addElements(_ elements: [NftElement], to set: String, in table: NftTable) throws {
        try addElements([set: elements], in: table)
    }

    /// Elements for several sets in one batch: one round trip to the kernel.
    public func addElements(_ bySet: [String: [NftElement]], in table: NftTable) throws {
        let nonEmpty = bySet.filter { !$0.value.isEmpty }
        guard !nonEmpty.isEmpty else { return }
        try commit { batch in
            for (set, elements) in nonEmpty.sorted(by: { $0.key < $1.key }) { batch.addElements(elements, to: set, in: table) }
        }
    }

    public func deleteElements(_ elements: [NftElement], from set: String, in table: NftTable) throws {
        guard !elements.isEmpty else { return }
        try commit { $0.deleteElements(elements, from: set, in: table) }
    }

    public func tableExists(family: NftFamily, name: String) throws -> Bool {
        let table = nftnl_table_alloc()!
        defer { nftnl_table_free(table) }
        nftnl_table_set_str(table, attr(NFTNL_TABLE_NAME), name)
        let message = nftMessage(NFT_MSG_GETTABLE, family: family) { nftnl_table_nlmsg_build_payload($0, table) }
        do {
            try netlink.perform(message, operation: "get table \(family.rawValue) \(name)")
            return true
        } catch let error as NetlinkError where error.code == ENOENT {
            return false
        }
    }

    /// Named counters of a table, by name. Empty when the table does not exist.
    public func counters(family: NftFamily, table: String) throws -> [String: NftCounter] {
        let object = nftnl_obj_alloc()!
        defer { nftnl_obj_free(object) }
        nftnl_obj_set_str(object, attr(NFTNL_OBJ_TABLE), table)
        nftnl_obj_set_u32(object, attr(NFTNL_OBJ_TYPE), UInt32(NFT_OBJECT_COUNTER))
        let message = nftMessage(NFT_MSG_GETOBJ, family: family) { nftnl_obj_nlmsg_build_payload($0, object) }
        let replies: [NetlinkReply]
        do {
            replies = try netlink.dump(message, operation: "list counters of \(table)")
        } catch let error as NetlinkError where error.code == ENOENT {
            return [:]
        }
        var result: [String: NftCounter] = [:]
        for reply in replies {
            let parsed = nftnl_obj_alloc()!
            defer { nftnl_obj_free(parsed) }
            guard reply.withHeader({ nftnl_obj_nlmsg_parse($0, parsed) }) == 0,
                  let name = nftnl_obj_get_str(parsed, attr(NFTNL_OBJ_TABLE)).map({ String(cString: $0) }),
                  name == table,
                  let counterName = nftnl_obj_get_str(parsed, attr(NFTNL_OBJ_NAME)).map({ String(cString: $0) })
            else { continue }
            result[counterName] = NftCounter(
                name: counterName,
                packets: nftnl_obj_get_u64(parsed, attr(NFTNL_OBJ_CTR_PKTS)),
                bytes: nftnl_obj_get_u64(parsed, attr(NFTNL_OBJ_CTR_BYTES)))
        }
        return result
    }

    /// The elements of a set or map as the kernel holds them now (keys read as `keyType`,
    /// see `NftElementKey(bytes:keyType:)`), each with its verdict in a map and the whole
    /// seconds it has left (rounded up) when the set has timeouts. Empty when the table or
    /// set does not exist.
    public func elements(of set: String, keyType: NftSetKeyType, family: NftFamily, table: String) throws -> [NftElement] {
        let request = nftnl_set_alloc()!
        defer { nftnl_set_free(request) }
        nftnl_set_set_str(request, attr(NFTNL_SET_TABLE), table)
        nftnl_set_set_str(request, attr(NFTNL_SET_NAME), set)
        let message = nftMessage(NFT_MSG_GETSETELEM, family: family) { nftnl_set_elems_nlmsg_build_payload($0, request) }
        let replies: [NetlinkReply]
        do {
            replies = try netlink.dump(message, operation: "list elements of \(set)")
        } catch let error as NetlinkError where error.code == ENOENT {
            return []
        }
        var result: [NftElement] = []
        for reply in replies {
            let parsed = nftnl_set_alloc()!
            defer { nftnl_set_free(parsed) }
            guard reply.withHeader({ nftnl_set_elems_nlmsg_parse($0, parsed) }) == 0,
                  let iterator = nftnl_set_elems_iter_create(parsed) else { continue }
            defer { nftnl_set_elems_iter_destroy(iterator) }
            while let element = nftnl_set_elems_iter_next(iterator) {
                var length: UInt32 = 0
                guard let data = nftnl_set_elem_get(element, attr(NFTNL_SET_ELEM_KEY), &length),
                      let key = NftElementKey(bytes: UnsafeRawBufferPointer(start: data, count: Int(length)), keyType: keyType) else { continue }
                let expires = nftnl_set_elem_is_set(element, attr(NFTNL_SET_ELEM_EXPIRATION))
                    ? UInt32(clamping: (nftnl_set_elem_get_u64(element, attr(NFTNL_SET_ELEM_EXPIRATION)) + 999) / 1000) : nil
                let verdict = nftnl_set_elem_is_set(element, attr(NFTNL_SET_ELEM_VERDICT))
                    ? NftExpressions.verdict(code: Int32(bitPattern: nftnl_set_elem_get_u32(element, attr(NFTNL_SET_ELEM_VERDICT))),
                                             chain: nftnl_set_elem_get_str(element, attr(NFTNL_SET_ELEM_CHAIN)).map { String(cString: $0) })
                    : nil
                result.append(NftElement(key: key, verdict: verdict, timeout: expires))
            }
        }
        return result
    }

    private func commit(_ build: (inout NftBatch) -> Void) throws {
        var batch = NftBatch(sequence: netlink.nextSequence)
        build(&batch)
        batch.finish()
        netlink.reserveBuffers(bytes: max(1 << 20, batch.bytes.count * 2, batch.messageCount * 1024))
        try netlink.send(batch.bytes, operation: "send nftables batch")
        try netlink.awaitAcknowledgements(batch.pending)
    }

    private func nftMessage(_ type: nf_tables_msg_types, family: NftFamily,
                            payload: (UnsafeMutablePointer<nlmsghdr>) -> Void) -> NetlinkMessage {
        let message = NetlinkMessage(type: 0, flags: 0)
        let header = message.header
        let built = nftnl_nlmsg_build_hdr(UnsafeMutableRawPointer(header).assumingMemoryBound(to: CChar.self),
                                          UInt16(type.rawValue), family.protocolFamily, 0, 0)!
        payload(built)
        return message
    }
}
