import Testing
@testable import DNS

@Suite struct TCPFramingTests {
    @Test func messagesComeOutWholeWhateverTheReads() throws {
        let first = query("bank.example"), second = query("corp.example", .aaaa, id: 9)
        let stream = try #require(DNSTCPFraming.frame(first)) + (try #require(DNSTCPFraming.frame(second)))
        #expect(stream.count == first.count + second.count + 4)
        // Byte by byte.
        var reader = DNSTCPReader()
        var out: [[UInt8]] = []
        for byte in stream {
            reader.append([byte])
            while let message = reader.next() { out.append(message) }
        }
        #expect(out == [first, second])
        #expect(reader.pendingByteCount == 0)
        // All at once, and split inside the length prefix.
        var whole = DNSTCPReader()
        whole.append(stream)
        #expect(whole.next() == first && whole.next() == second && whole.next() == nil)
        var split = DNSTCPReader()
        split.append(stream.prefix(first.count + 3))
        #expect(split.next() == first && split.next() == nil)
        #expect(split.pendingByteCount == 1)
        split.append(stream.dropFirst(first.count + 3))
        #expect(split.next() == second)
    }

    @Test func tooLongToFrame() {
        #expect(DNSTCPFraming.frame([UInt8](repeating: 0, count: 65536)) == nil)
        #expect(DNSTCPFraming.frame([UInt8](repeating: 0, count: 65535))?.prefix(2) == [0xff, 0xff])
    }
}
