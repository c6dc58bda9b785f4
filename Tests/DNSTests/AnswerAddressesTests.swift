import Addresses
import DomainNames
import Testing
@testable import DNS

/// The CNAME chain from the question's name and the addresses it leads to, matched against
/// the lists by any name of the chain.
@Suite struct AnswerAddressesTests {
    let lists = DomainList([[try! DomainPattern("bank.example")], [try! DomainPattern("*.cdn.example")]])

    @Test func directMatch() throws {
        let response = answer("Bank.Example", id: 1, records: [a("bank.example", "192.0.2.1", ttl: 30), a("BANK.example", "192.0.2.2", ttl: 40)])
        let result = try AnswerAddresses(response: response, lists: lists)
        #expect(result.chain == [name("bank.example")] && result.chainEnd == .complete)
        #expect(result.matches == [.list(0)] && result.lists == .list(0))
        #expect(result.addresses.map(\.address) == [IPAddress("192.0.2.1")!, IPAddress("192.0.2.2")!])
        #expect(result.addresses.map(\.ttl) == [30, 40])
    }

    @Test func matchOnTheQueriedNameFillsWithTheCNAMETargetsAddresses() throws {
        let response = answer("bank.example", .aaaa, id: 1, records: [
            cname("bank.example", "bank.provider.example"),
            DNSRecord(name: name("bank.provider.example"), ttl: 20, data: .address(IPAddress("2001:db8::7")!)),
        ])
        let result = try AnswerAddresses(response: response, lists: lists)
        #expect(result.chain == [name("bank.example"), name("bank.provider.example")])
        #expect(result.matches == [.list(0), []])
        #expect(result.addresses == [.init(owner: name("bank.provider.example"), address: IPAddress("2001:db8::7")!, ttl: 20)])
    }

    @Test func matchOnTheCNAMETarget() throws {
        // Records in any order: the chain is followed by name, not by position.
        let response = answer("shop.example", id: 1, records: [
            a("edge.x.cdn.example", "198.51.100.9"),
            cname("x.cdn.example", "edge.x.cdn.example"),
            cname("shop.example", "x.cdn.example"),
        ])
        let result = try AnswerAddresses(response: response, lists: lists)
        #expect(result.chain == [name("shop.example"), name("x.cdn.example"), name("edge.x.cdn.example")])
        #expect(result.matches == [[], .list(1), .list(1)] && result.lists == .list(1))
        #expect(result.addresses.map(\.address) == [IPAddress("198.51.100.9")!])
    }

    @Test func recordsOffTheChainAreIgnored() throws {
        var message = try DNSMessage(parsing: answer("bank.example", id: 1, records: [
            a("bank.example", "192.0.2.1"),
            a("evil.example", "203.0.113.66"),
            cname("other.example", "bank.example"),
        ]))
        message.additional = [a("bank.example", "203.0.113.67")]
        message.authority = [a("bank.example", "203.0.113.68")]
        let result = try AnswerAddresses(response: message.encoded(), lists: lists)
        #expect(result.chain == [name("bank.example")])
        #expect(result.addresses.map(\.address) == [IPAddress("192.0.2.1")!])
    }

    @Test func chainLoop() throws {
        let response = answer("bank.example", id: 1, records: [
            cname("bank.example", "a.example"), cname("a.example", "b.example"), cname("b.example", "A.example"), a("a.example", "192.0.2.1"),
        ])
        let result = try AnswerAddresses(response: response, lists: lists)
        #expect(result.chainEnd == .loop)
        #expect(result.chain == [name("bank.example"), name("a.example"), name("b.example")])
        // A name that is its own CNAME.
        let selfLoop = try AnswerAddresses(response: answer("bank.example", id: 1, records: [cname("bank.example", "BANK.example")]), lists: lists)
        #expect(selfLoop.chainEnd == .loop && selfLoop.chain == [name("bank.example")])
    }

    @Test func overlongChainIsCut() throws {
        func chain(_ length: Int) -> [DNSRecord] {
            (0..<length).map { cname($0 == 0 ? "bank.example" : "c\($0).example", "c\($0 + 1).example") } + [a("c\(length).example", "192.0.2.1")]
        }
        let longest = try AnswerAddresses(response: answer("bank.example", id: 1, records: chain(AnswerAddresses.maxCNAMEs)), lists: lists)
        #expect(longest.chainEnd == .complete && longest.chain.count == AnswerAddresses.maxCNAMEs + 1 && longest.addresses.count == 1)
        let tooLong = try AnswerAddresses(response: answer("bank.example", id: 1, records: chain(AnswerAddresses.maxCNAMEs + 1)), lists: lists)
        #expect(tooLong.chainEnd == .tooLong && tooLong.chain.count == AnswerAddresses.maxCNAMEs + 1 && tooLong.addresses.isEmpty)
    }

    @Test func httpsRecordsAddressHintsCountAsAddresses() throws {
        let alpn: (key: UInt16, value: [UInt8]) = (1, [2, 0x68, 0x32])
        let v4: (key: UInt16, value: [UInt8]) = (4, [192, 0, 2, 7, 192, 0, 2, 8])
        let v6: (key: UInt16, value: [UInt8]) = (6, IPAddress("2001:db8::8")!.bytes)
        let response = answer("bank.example", .https, id: 1, records: [
            cname("bank.example", "bank.provider.example"),
            https("bank.provider.example", target: [4] + Array("edge".utf8) + [0], params: [alpn, v4, v6], ttl: 50),
            // Off the chain: ignored, hints and all.
            https("other.example", params: [v4]),
        ])
        let result = try AnswerAddresses(response: response, lists: lists)
        #expect(result.lists == .list(0))
        #expect(result.addresses == ["192.0.2.7", "192.0.2.8", "2001:db8::8"].map { .init(owner: name("bank.provider.example"), address: IPAddress($0)!, ttl: 50) })
        // AliasMode (priority 0) has no hints; a record whose keys are out of order, or whose
        // hint is not a whole address, is discarded by clients (RFC 9460) and gives none.
        for record in [https("bank.example", priority: 0, params: []), https("bank.example", params: [v6, v4]),
                       https("bank.example", params: [(4, [192, 0, 2])]), https("bank.example", params: [(4, [])]),
                       https("bank.example", target: [5, 0x61], params: [])] {
            let odd = try AnswerAddresses(response: answer("bank.example", .https, id: 1, records: [record]), lists: lists)
            #expect(odd.addresses.isEmpty && odd.lists == .list(0))
        }
    }

    @Test func ttlWithTheTopBitSetIsZero() throws {
        let result = try AnswerAddresses(response: answer("bank.example", id: 1, records: [a("bank.example", "192.0.2.1", ttl: 0x8000_0001)]), lists: lists)
        #expect(result.addresses.map(\.ttl) == [0])
    }

    @Test func malformedResponsesAreRefused() {
        let response = answer("bank.example", id: 1, records: [a("bank.example", "192.0.2.1")])
        #expect(throws: DNSWireError.truncated) { try AnswerAddresses(response: Array(response.dropLast()), lists: lists) }
    }
}
