import Descriptors
import Glibc
import Testing

/// Each test owns the write end of a pipe; the pipe's read end tells whether it is closed
/// (the reader sees the end of the pipe) or still open (nothing to read yet).
@Suite struct DescriptorTableTests {
    static func pipeEnds() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        return (ends[0], ends[1])
    }

    static func writerClosed(_ reader: borrowing FileDescriptor) -> Bool {
        var byte: UInt8 = 0
        return read(reader.raw, &byte, 1) == 0
    }

    @Test func closesWhatItHoldsAndNothingElse() throws {
        let (r1, w1) = try Self.pipeEnds(), (r2, w2) = try Self.pipeEnds()
        let reader = FileDescriptor(adopting: r1), otherReader = FileDescriptor(adopting: r2)
        let other = FileDescriptor(adopting: w2)
        var table = DescriptorTable()
        let number = table.insert(FileDescriptor(adopting: w1))
        let held = table.contains(number), openBefore = !Self.writerClosed(reader)
        #expect(number.raw == w1 && held && openBefore)
        table.close(other.number)
        let otherOpen = !Self.writerClosed(otherReader)
        #expect(otherOpen, "a descriptor the table does not hold stays open")
        table.close(number)
        let closed = Self.writerClosed(reader), stillHeld = table.contains(number)
        #expect(closed && !stillHeld)
        let otherNumber = other.raw
        #expect(otherNumber == w2)
    }

    @Test func whatItHoldsClosesWithIt() throws {
        let (r1, w1) = try Self.pipeEnds(), (r2, w2) = try Self.pipeEnds()
        let reader1 = FileDescriptor(adopting: r1), reader2 = FileDescriptor(adopting: r2)
        do {
            var table = DescriptorTable()
            let first = table.insert(FileDescriptor(adopting: w1)), second = table.insert(FileDescriptor(adopting: w2))
            let open = !Self.writerClosed(reader1) && !Self.writerClosed(reader2)
            let held = table.contains(first) && table.contains(second)
            #expect(open && held)
        }
        let closed = Self.writerClosed(reader1) && Self.writerClosed(reader2)
        #expect(closed)
    }

    @Test func takeHandsTheDescriptorToOneOwner() throws {
        let (r, w) = try Self.pipeEnds()
        let reader = FileDescriptor(adopting: r)
        var table = DescriptorTable()
        let number = table.insert(FileDescriptor(adopting: w))
        guard let owner = table.take(number) else {
            Issue.record("the table did not hand back what it held")
            return
        }
        table.closeAll()
        let held = table.contains(number), open = !Self.writerClosed(reader)
        #expect(!held)
        #expect(open, "taken: the table no longer closes it")
        owner.close()
        let closed = Self.writerClosed(reader)
        #expect(closed)
    }
}
