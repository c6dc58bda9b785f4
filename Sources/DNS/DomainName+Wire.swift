import DomainNames

extension DomainName {
    /// Decompresses the name at `offset` of a message.
    init(in bytes: [UInt8], at offset: Int) throws(DNSWireError) {
        var wire: [UInt8] = []
        var cursor = NameCursor(at: offset)
        while let label = try cursor.next(in: bytes) {
            wire.append(UInt8(label.count))
            wire += bytes[label]
        }
        wire.append(0)
        self.init(uncheckedWire: wire)
    }
}
