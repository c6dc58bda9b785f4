import HexDigits

/// A number written as a "0x..." string in JSON: packet marks are bit patterns, and every
/// tool that shows them (ip rule, nft, vpnctl status) writes them so.
@propertyWrapper
public struct Hexadecimal: Codable, Hashable, Sendable {
    public var wrappedValue: UInt32

    public init(wrappedValue: UInt32) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard text.hasPrefix("0x"), let value = UInt32(text.dropFirst(2), radix: 16) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a 0x... number: \(text)"))
        }
        wrappedValue = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex(wrappedValue))
    }
}
