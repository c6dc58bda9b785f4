import Addresses
import CNetlink
import Nftables

/// nftables objects encoded with libnftnl into one transaction: the kernel applies all of
/// it or none of it. Every message asks for an acknowledgement so that a refusal can be
/// traced to the object that caused it. It owns libnftnl's scratch buffer and cannot be
/// copied, so the buffer is freed once, when the batch goes, and never used after.
struct NftBatch: ~Copyable {
    private(set) var bytes: [UInt8] = []
    /// Sequence number -> what the message does, for error messages.
    private(set) var pending: [UInt32: String] = [:]
    private var nextSetID: UInt32 = 1
    private let sequence: () -> UInt32
    private let scratch: UnsafeMutableRawBufferPointer

    init(sequence: @escaping () -> UInt32) {
        self.sequence = sequence
        scratch = .allocate(byteCount: 1 << 16, alignment: 8)
        append(nftnl_batch_begin(buffer, sequence()))
    }

    deinit { scratch.deallocate() }

    mutating func finish() {
        append(nftnl_batch_end(buffer, sequence()))
    }

    var messageCount: Int { pending.count }

    private var buffer: UnsafeMutablePointer<CChar> { scratch.baseAddress!.assumingMemoryBound(to: CChar.self) }

    private mutating func append(_ header: UnsafeMutablePointer<nlmsghdr>?) {
        guard let header else { return }
        bytes += UnsafeRawBufferPointer(start: header, count: Int(header.pointee.nlmsg_len))
    }

    private mutating func message(_ type: nf_tables_msg_types, family: NftFamily, flags: Int32, _ what: String,
                                  payload: (UnsafeMutablePointer<nlmsghdr>) -> Void) {
        let seq = sequence()
        let header = nftnl_nlmsg_build_hdr(buffer, UInt16(type.rawValue), family.protocolFamily,
                                           UInt16(flags | NLM_F_ACK), seq)!
        payload(header)
        pending[seq] = what
        append(header)
    }

    // MARK: tables

    /// Creates the table if it is missing (no NLM_F_EXCL), so that a following delete
    /// always succeeds: "ensure, delete, create" is the atomic replace.
    mutating func ensureTable(_ family: NftFamily, _ name: String) {
        tableMessage(NFT_MSG_NEWTABLE, family, name, flags: NLM_F_CREATE, "create table \(family.rawValue) \(name)")
    }

    mutating func deleteTable(_ family: NftFamily, _ name: String) {
        tableMessage(NFT_MSG_DELTABLE, family, name, flags: 0, "delete table \(family.rawValue) \(name)")
    }

    private mutating func tableMessage(_ type: nf_tables_msg_types, _ family: NftFamily, _ name: String, flags: Int32, _ what: String) {
        let table = nftnl_table_alloc()!
        defer { nftnl_table_free(table) }
        nftnl_table_set_str(table, attr(NFTNL_TABLE_NAME), name)
        nftnl_table_set_u32(table, attr(NFTNL_TABLE_FAMILY), UInt32(family.protocolFamily))
        message(type, family: family, flags: flags, what) { nftnl_table_nlmsg_build_payload($0, table) }
    }

    /// The whole table: counters, chains, sets, elements, rules, in dependency order.
    mutating func createTable(_ table: NftTable) {
        tableMessage(NFT_MSG_NEWTABLE, table.family, table.name, flags: NLM_F_CREATE | NLM_F_EXCL,
                     "create table \(table.family.rawValue) \(table.name)")
        for counter in table.counters { addCounter(counter, in: table) }
        for chain in table.chains { addChain(chain, in: table) }
        for set in table.sets {
            addSet(set, in: table)
            addElements(set.elements, to: set.name, in: table)
        }
        for chain in table.chains {
            for rule in chain.rules { addRule(rule, chain: chain.name, in: table) }
        }
    }

    /// `old` -> `new` as `NftTableUpdate` orders it; `carried` holds elements for timeout
    /// sets that are made anew (read from the kernel).
    mutating func update(_ update: NftTableUpdate, in table: NftTable, carried: [String: [NftElement]]) {
        for chain in update.flushedChains { objectMessage(NFT_MSG_DELRULE, chain: chain, in: table, "flush chain \(chain)") }
        for removed in update.removedElements { deleteElements(removed.elements, from: removed.set, in: table) }
        for set in update.deletedSets {
            let nftSet = makeSet(set, in: table)
            defer { nftnl_set_free(nftSet) }
            message(NFT_MSG_DELSET, family: table.family, flags: 0, "delete set \(set)") { nftnl_set_nlmsg_build_payload($0, nftSet) }
        }
        for chain in update.deletedChains { objectMessage(NFT_MSG_DELCHAIN, chain: chain, in: table, "delete chain \(chain)") }
        for counter in update.deletedCounters {
            let object = counterObject(NftCounter(name: counter), in: table)
            defer { nftnl_obj_free(object) }
            message(NFT_MSG_DELOBJ, family: table.family, flags: 0, "delete counter \(counter)") { nftnl_obj_nlmsg_build_payload($0, object) }
        }
        for counter in update.createdCounters { addCounter(counter, in: table) }
        for chain in update.createdChains { addChain(chain, in: table) }
        for set in update.createdSets {
            addSet(set, in: table)
            addElements(set.elements + (carried[set.name] ?? []), to: set.name, in: table)
        }
        for added in update.addedElements { addElements(added.elements, to: added.set, in: table) }
        for chain in update.rules {
            for rule in chain.rules { addRule(rule, chain: chain.name, in: table) }
        }
    }

    /// A rule or chain message naming only the chain: DELRULE flushes it, DELCHAIN deletes it.
    private mutating func objectMessage(_ type: nf_tables_msg_types, chain: String, in table: NftTable, _ what: String) {
        if type == NFT_MSG_DELRULE {
            let rule = nftnl_rule_alloc()!
            defer { nftnl_rule_free(rule) }
            nftnl_rule_set_str(rule, attr(NFTNL_RULE_TABLE), table.name)
            nftnl_rule_set_str(rule, attr(NFTNL_RULE_CHAIN), chain)
            nftnl_rule_set_u32(rule, attr(NFTNL_RULE_FAMILY), UInt32(table.family.protocolFamily))
            message(type, family: table.family, flags: 0, what) { nftnl_rule_nlmsg_build_payload($0, rule) }
        } else {
            let nftChain = nftnl_chain_alloc()!
            defer { nftnl_chain_free(nftChain) }
            nftnl_chain_set_str(nftChain, attr(NFTNL_CHAIN_TABLE), table.name)
            nftnl_chain_set_str(nftChain, attr(NFTNL_CHAIN_NAME), chain)
            nftnl_chain_set_u32(nftChain, attr(NFTNL_CHAIN_FAMILY), UInt32(table.family.protocolFamily))
            message(type, family: table.family, flags: 0, what) { nftnl_chain_nlmsg_build_payload($0, nftChain) }
        }
    }

    // MARK: objects

    private func counterObject(_ counter: NftCounter, in table: NftTable) -> OpaquePointer {
        let object = nftnl_obj_alloc()!
        nftnl_obj_set_str(object, attr(NFTNL_OBJ_TABLE), table.name)
        nftnl_obj_set_str(object, attr(NFTNL_OBJ_NAME), counter.name)
        nftnl_obj_set_u32(object, attr(NFTNL_OBJ_TYPE), UInt32(NFT_OBJECT_COUNTER))
        nftnl_obj_set_u32(object, attr(NFTNL_OBJ_FAMILY), UInt32(table.family.protocolFamily))
        return object
    }

    private mutating func addCounter(_ counter: NftCounter, in table: NftTable) {
        let object = counterObject(counter, in: table)
        defer { nftnl_obj_free(object) }
        nftnl_obj_set_u64(object, attr(NFTNL_OBJ_CTR_PKTS), counter.packets)
        nftnl_obj_set_u64(object, attr(NFTNL_OBJ_CTR_BYTES), counter.bytes)
        if let comment = counter.comment {
            UserData.with([.string(UInt8(attr(NFTNL_UDATA_OBJ_COMMENT)), comment)]) {
                nftnl_obj_set_data(object, attr(NFTNL_OBJ_USERDATA), $0.baseAddress, UInt32($0.count))
            }
        }
        message(NFT_MSG_NEWOBJ, family: table.family, flags: NLM_F_CREATE | NLM_F_EXCL, "create counter \(counter.name)") {
            nftnl_obj_nlmsg_build_payload($0, object)
        }
    }

    private mutating func addChain(_ chain: NftChain, in table: NftTable) {
        let nftChain = nftnl_chain_alloc()!
        defer { nftnl_chain_free(nftChain) }
        nftnl_chain_set_str(nftChain, attr(NFTNL_CHAIN_TABLE), table.name)
        nftnl_chain_set_str(nftChain, attr(NFTNL_CHAIN_NAME), chain.name)
        nftnl_chain_set_u32(nftChain, attr(NFTNL_CHAIN_FAMILY), UInt32(table.family.protocolFamily))
        if let base = chain.base {
            nftnl_chain_set_u32(nftChain, attr(NFTNL_CHAIN_HOOKNUM), base.hook.number)
            nftnl_chain_set_s32(nftChain, attr(NFTNL_CHAIN_PRIO), base.priority)
            nftnl_chain_set_str(nftChain, attr(NFTNL_CHAIN_TYPE), base.kind.rawValue)
            nftnl_chain_set_u32(nftChain, attr(NFTNL_CHAIN_POLICY), UInt32(bitPattern: NftExpressions.verdictCode(base.policy)))
        }
        message(NFT_MSG_NEWCHAIN, family: table.family, flags: NLM_F_CREATE | NLM_F_EXCL, "create chain \(chain.name)") {
            nftnl_chain_nlmsg_build_payload($0, nftChain)
        }
    }

    private mutating func addSet(_ set: NftSet, in table: NftTable) {
        let nftSet = makeSet(set.name, in: table)
        defer { nftnl_set_free(nftSet) }
        nftnl_set_set_u32(nftSet, attr(NFTNL_SET_ID), nextSetID)
        nextSetID += 1
        nftnl_set_set_u32(nftSet, attr(NFTNL_SET_KEY_TYPE), set.key.datatype)
        nftnl_set_set_u32(nftSet, attr(NFTNL_SET_KEY_LEN), set.key.length)
        var flags: UInt32 = (set.interval ? UInt32(NFT_SET_INTERVAL.rawValue) : 0) | (set.timeout ? UInt32(NFT_SET_TIMEOUT.rawValue) : 0)
        if set.data == .verdict {
            flags |= UInt32(NFT_SET_MAP.rawValue)
            nftnl_set_set_u32(nftSet, attr(NFTNL_SET_DATA_TYPE), NFT_DATA_VERDICT.rawValue)
            nftnl_set_set_u32(nftSet, attr(NFTNL_SET_DATA_LEN), 16)
        }
        nftnl_set_set_u32(nftSet, attr(NFTNL_SET_FLAGS), flags)
        // The same user data nft writes, so that `nft list` shows keys in their notation.
        var entries: [UserData.Entry] = [
            .u32(UInt8(attr(NFTNL_UDATA_SET_KEYBYTEORDER)), set.key.isBigEndian ? 2 : 1),
            .u32(UInt8(attr(NFTNL_UDATA_SET_DATABYTEORDER)), 0),
        ]
        if set.isMap { entries.append(.u32(UInt8(attr(NFTNL_UDATA_SET_DATA_INTERVAL)), 0)) }
        if let comment = set.comment { entries.append(.string(UInt8(attr(NFTNL_UDATA_SET_COMMENT)), comment)) }
        UserData.with(entries) {
            nftnl_set_set_data(nftSet, attr(NFTNL_SET_USERDATA), $0.baseAddress, UInt32($0.count))
        }
        message(NFT_MSG_NEWSET, family: table.family, flags: NLM_F_CREATE | NLM_F_EXCL, "create set \(set.name)") {
            nftnl_set_nlmsg_build_payload($0, nftSet)
        }
    }

    private func makeSet(_ name: String, in table: NftTable) -> OpaquePointer {
        let nftSet = nftnl_set_alloc()!
        nftnl_set_set_str(nftSet, attr(NFTNL_SET_TABLE), table.name)
        nftnl_set_set_str(nftSet, attr(NFTNL_SET_NAME), name)
        nftnl_set_set_u32(nftSet, attr(NFTNL_SET_FAMILY), UInt32(table.family.protocolFamily))
        return nftSet
    }

    // MARK: elements

    mutating func addElements(_ elements: [NftElement], to set: String, in table: NftTable) {
        let interval = table.set(named: set)?.interval ?? false
        elementMessages(interval ? Self.intervalElements(elements) : elements.map { ($0, false) }, set: set, table: table,
                        type: NFT_MSG_NEWSETELEM, flags: NLM_F_CREATE, verb: "add")
    }

    /// An interval set holds boundaries, as nft sends them: prefixes sorted, each a start
    /// and, unless it runs to the top of the family, an end (the first address after it,
    /// flagged INTERVAL_END); a leading end at address 0 when the first start is not 0.
    /// Elements are (element, isEnd).
    static func intervalElements(_ elements: [NftElement]) -> [(NftElement, Bool)] {
        // A map's data goes with the start; ends carry none.
        let starts = elements.compactMap { element -> (IPPrefix, NftVerdict?)? in
            if case let .prefix(prefix) = element.key { return (prefix.network, element.verdict) } else { return nil }
        }.sorted { $0.0.address < $1.0.address }
        guard let first = starts.first?.0 else { return [] }
        var result: [(NftElement, Bool)] = []
        let zero = IPPrefix.defaultRoute(ipv4: first.isIPv4).address
        if first.address != zero { result.append((NftElement(key: .prefix(IPPrefix(address: zero, length: zero.bitCount)!)), true)) }
        for (prefix, verdict) in starts {
            result.append((NftElement(key: .prefix(prefix), verdict: verdict), false))
            if let end = prefix.end { result.append((NftElement(key: .prefix(IPPrefix(address: end, length: end.bitCount)!)), true)) }
        }
        return result
    }

    mutating func deleteElements(_ elements: [NftElement], from set: String, in table: NftTable) {
        elementMessages(elements.map { ($0, false) }, set: set, table: table, type: NFT_MSG_DELSETELEM, flags: 0, verb: "delete")
    }

    private mutating func elementMessages(_ elements: [(NftElement, Bool)], set: String, table: NftTable,
                                          type: nf_tables_msg_types, flags: Int32, verb: String) {
        // Chunks keep each message well inside the scratch buffer.
        for start in stride(from: 0, to: elements.count, by: 128) {
            let chunk = elements[start..<min(start + 128, elements.count)]
            let nftSet = makeSet(set, in: table)
            defer { nftnl_set_free(nftSet) }
            for (element, isEnd) in chunk { nftnl_set_elem_add(nftSet, makeElement(element, intervalEnd: isEnd)) }
            message(type, family: table.family, flags: flags, "\(verb) \(chunk.count) \(chunk.count == 1 ? "element" : "elements") of \(set)") {
                nftnl_set_elems_nlmsg_build_payload($0, nftSet)
            }
        }
    }

    private func makeElement(_ element: NftElement, intervalEnd: Bool = false) -> OpaquePointer {
        let nftElement = nftnl_set_elem_alloc()!
        if intervalEnd { nftnl_set_elem_set_u32(nftElement, attr(NFTNL_SET_ELEM_FLAGS), UInt32(NFT_SET_ELEM_INTERVAL_END.rawValue)) }
        if case let .prefix(prefix) = element.key, !intervalEnd, prefix.end == nil {
            // What nft writes for an interval that runs to the top, so that it lists as a prefix.
            UserData.with([.u32(1 /* NFTNL_UDATA_SET_ELEM_FLAGS */, 1 /* NFTNL_SET_ELEM_F_INTERVAL_OPEN */)]) {
                nftnl_set_elem_set(nftElement, attr(NFTNL_SET_ELEM_USERDATA), $0.baseAddress, UInt32($0.count))
            }
        }
        _ = element.key.bytes.withUnsafeBytes {
            nftnl_set_elem_set(nftElement, attr(NFTNL_SET_ELEM_KEY), $0.baseAddress, UInt32($0.count))
        }
        if let timeout = element.timeout {
            nftnl_set_elem_set_u64(nftElement, attr(NFTNL_SET_ELEM_TIMEOUT), UInt64(timeout) * 1000)
        }
        if let verdict = element.verdict {
            nftnl_set_elem_set_u32(nftElement, attr(NFTNL_SET_ELEM_VERDICT), UInt32(bitPattern: NftExpressions.verdictCode(verdict)))
            if let chain = NftExpressions.chainName(verdict) {
                nftnl_set_elem_set_str(nftElement, attr(NFTNL_SET_ELEM_CHAIN), chain)
            }
        }
        return nftElement
    }

    // MARK: rules

    private mutating func addRule(_ rule: NftRule, chain: String, in table: NftTable) {
        let nftRule = nftnl_rule_alloc()!
        defer { nftnl_rule_free(nftRule) }
        nftnl_rule_set_str(nftRule, attr(NFTNL_RULE_TABLE), table.name)
        nftnl_rule_set_str(nftRule, attr(NFTNL_RULE_CHAIN), chain)
        nftnl_rule_set_u32(nftRule, attr(NFTNL_RULE_FAMILY), UInt32(table.family.protocolFamily))
        for statement in rule.statements {
            for expression in NftExpressions.encode(statement) { nftnl_rule_add_expr(nftRule, expression) }
        }
        if let comment = rule.comment {
            UserData.with([.string(UInt8(attr(NFTNL_UDATA_RULE_COMMENT)), comment)]) {
                nftnl_rule_set_data(nftRule, attr(NFTNL_RULE_USERDATA), $0.baseAddress, UInt32($0.count))
            }
        }
        let text = NftTextRenderer().rule(rule)
        message(NFT_MSG_NEWRULE, family: table.family, flags: NLM_F_CREATE | NLM_F_APPEND, "add rule to \(chain): \(text)") {
            nftnl_rule_nlmsg_build_payload($0, nftRule)
        }
    }
}

/// nftnl's TLV user data (comments, set byte orders).
enum UserData {
    enum Entry {
        case u32(UInt8, UInt32)
        case string(UInt8, String)
    }

    static func with(_ entries: [Entry], _ body: (UnsafeRawBufferPointer) -> Void) {
        let buffer = nftnl_udata_buf_alloc(1024)!
        defer { nftnl_udata_buf_free(buffer) }
        for entry in entries {
            switch entry {
            case let .u32(type, value): nftnl_udata_put_u32(buffer, type, value)
            case let .string(type, value): nftnl_udata_put_strz(buffer, type, value)
            }
        }
        body(UnsafeRawBufferPointer(start: nftnl_udata_buf_data(buffer), count: Int(nftnl_udata_buf_len(buffer))))
    }
}
