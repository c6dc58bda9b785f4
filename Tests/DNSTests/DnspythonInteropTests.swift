import Testing
@testable import DNS

/// The codec against dnspython in both directions: messages dnspython makes and compresses
/// (random names with shared suffixes, mixed case, escapes, every section, EDNS options)
/// are read by us as dnspython reads them, and what we encode from them dnspython reads back
/// the same.
@Suite struct DnspythonInteropTests {
    @Test func dnspythonMessagesReadAlikeAndOurEncodingReadsBack() throws {
        let corpus = try Dnspython.generate(count: 400, seed: 1)
        var encoded: [[UInt8]] = []
        var ours: [String] = []
        for (wire, expected) in corpus {
            let message = try DNSMessage(parsing: wire)
            #expect(describe(message) == expected)
            ours.append(describe(message))
            encoded.append(message.encoded())
        }
        let theirs = try Dnspython.describe(encoded)
        for (mine, read) in zip(ours, theirs) { #expect(read == mine) }
    }

    @Test func truncatedDnspythonMessagesAreRefused() throws {
        for (wire, _) in try Dnspython.generate(count: 40, seed: 2) {
            for length in stride(from: 0, to: wire.count, by: 3) {
                #expect(throws: DNSWireError.self) { try DNSMessage(parsing: Array(wire.prefix(length))) }
            }
        }
    }

    @Test func errorRepliesReadInDnspython() throws {
        let queries = [query("bank.example", id: 1), query("Www.Corp.Example", .aaaa, id: 2, edns: true), query("x.y", .https, id: 3)]
        var replies: [[UInt8]] = []
        for (code, query) in zip([DNSResponseCode.serverFailure, .refused, .formatError], queries) {
            replies.append(try #require(DNSErrorReply.make(answering: query, code: code)))
        }
        let read = try Dnspython.describe(replies)
        #expect(read == replies.map { describe(try! DNSMessage(parsing: $0)) })
        #expect(read[0] == "id=1 flags=33154 | q=bank.example. 1 1")
        #expect(read[1] == "id=2 flags=33157 | q=Www.Corp.Example. 28 1 | edns=1232 0 0 0 ")
        #expect(read[2] == "id=3 flags=33153 | q=x.y. 65 1")
    }
}
