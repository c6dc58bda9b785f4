import Testing
@testable import DNS

/// The proxy's own replies keep the client's ID and question, so the stub resolver that
/// asked accepts them.
@Suite struct ErrorReplyTests {
    @Test func servfailEchoesIDQuestionAndEDNS() throws {
        let reply = try #require(DNSErrorReply.make(answering: query("Bank.Example", .aaaa, id: 0xbeef, edns: true), code: .serverFailure))
        let message = try DNSMessage(parsing: reply)
        #expect(message.header.id == 0xbeef)
        #expect(message.header.isResponse && message.header.recursionDesired && message.header.recursionAvailable)
        #expect(message.header.responseCode == .serverFailure)
        #expect(message.questions == [DNSQuestion(name: name("bank.example"), type: .aaaa)])
        #expect(message.questions[0].name.description == "Bank.Example.")
        #expect(message.edns == EDNS(udpPayloadSize: DNSErrorReply.udpPayloadSize))
        #expect(message.answers.isEmpty && message.authority.isEmpty && message.additional.isEmpty)
    }

    @Test func formerrKeepsWhatCanBeRead() throws {
        // A readable question followed by garbage: the question is echoed, no OPT.
        let garbage = query("bank.example", edns: true) + [1, 2, 3]
        let reply = try DNSMessage(parsing: #require(DNSErrorReply.make(answering: garbage, code: .formatError)))
        #expect(reply.header.responseCode == .formatError)
        #expect(reply.questions.map(\.name) == [name("bank.example")])
        #expect(reply.edns == nil)
        // Only a header: the reply is a header.
        let headerOnly = try DNSMessage(parsing: #require(DNSErrorReply.make(answering: [0xab, 0xcd, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0], code: .formatError)))
        #expect(headerOnly.header.id == 0xabcd && headerOnly.questions.isEmpty)
        #expect(DNSErrorReply.make(answering: [1, 2, 3], code: .formatError) == nil)
    }
}
