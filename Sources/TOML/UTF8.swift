/// UTF-8 checks and encoding. The whole document is validated once up front
/// so that the parser can treat every byte >= 0x80 as part of a valid scalar
/// and build Strings from byte ranges without re-checking them.
enum UTF8Validation {
    /// Offset of the first ill-formed UTF-8 sequence (overlong forms,
    /// surrogates and values past U+10FFFF included) — its lead byte, which
    /// is where an editor shows the bad character — or nil if all is valid.
    static func firstInvalidOffset(in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { firstInvalidOffset(in: $0) }
    }

    private static func firstInvalidOffset(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            // Documents are mostly ASCII: skip it eight bytes at a time.
            while index + 8 <= count,
                  UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
            }
            guard index < count else { break }
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F  // excludes UTF-16 surrogates
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F  // nothing past U+10FFFF
            default: return index
            }
            for offset in 1..<length {
                let position = index + offset
                guard position < count else { return index }
                let byte = bytes[position]
                let low = offset == 1 ? lower : 0x80
                let high = offset == 1 ? upper : 0xBF
                guard byte >= low && byte <= high else { return index }
            }
            index += length
        }
        return nil
    }

    static func isScalarValue(_ value: UInt32) -> Bool {
        value <= 0x10FFFF && !(0xD800...0xDFFF).contains(value)
    }

    /// Appends the UTF-8 encoding of a scalar value already known to be valid.
    static func append(scalar value: UInt32, to buffer: inout [UInt8]) {
        switch value {
        case 0..<0x80:
            buffer.append(UInt8(value))
        case 0x80..<0x800:
            buffer.append(UInt8(0xC0 | (value >> 6)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        case 0x800..<0x10000:
            buffer.append(UInt8(0xE0 | (value >> 12)))
            buffer.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        default:
            buffer.append(UInt8(0xF0 | (value >> 18)))
            buffer.append(UInt8(0x80 | ((value >> 12) & 0x3F)))
            buffer.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            buffer.append(UInt8(0x80 | (value & 0x3F)))
        }
    }
}
