import DomainNames

/// The replies the proxy makes itself, when it cannot or will not relay an answer: FORMERR
/// for a query it cannot read, SERVFAIL when no server answered (or an answer cannot be
/// honoured), REFUSED when it has no server, NOTIMP for opcodes other than QUERY.
public enum DNSErrorReply {
    /// What an EDNS-aware client may send us over UDP (the DNS flag day 2020 value).
    public static let udpPayloadSize: UInt16 = 1232

    /// A reply to `message` (a query, or an answer the proxy withholds) with `code`: the
    /// message's ID, opcode, RD and CD bits, its first question when that can be read, and an
    /// OPT record when the message had a readable one. Nil when not even a header is there.
    public static func make(answering message: [UInt8], code: DNSResponseCode) -> [UInt8]? {
        guard let original = DNSHeader(of: message) else { return nil }
        var header = DNSHeader(id: original.id)
        header.isResponse = true
        header.opcode = original.opcode
        header.recursionDesired = original.recursionDesired
        header.recursionAvailable = true
        header.checkingDisabled = original.checkingDisabled
        header.responseCode = code
        var reply = DNSMessage(header: header)
        if let parsed = try? DNSMessage(parsing: message) {
            reply.questions = Array(parsed.questions.prefix(1))
            if parsed.edns != nil { reply.edns = EDNS(udpPayloadSize: udpPayloadSize) }
        } else if (try? Wire.u16(message, 4)) ?? 0 > 0,
                  let (question, _) = try? MessageWalker.question(message, at: DNSHeader.size),
                  let name = try? DomainName(in: message, at: question.name) {
            reply.questions = [DNSQuestion(name: name, type: question.type, dnsClass: question.dnsClass)]
        }
        return reply.encoded()
    }
}
