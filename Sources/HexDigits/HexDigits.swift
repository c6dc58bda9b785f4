// Hexadecimal text, written one way wherever the project writes it: marks and masks as
// `ip rule`, nft and vpnctl show them ("0x7f000000"), key bytes as WireGuard's UAPI does,
// code points as Unicode does ("U+00E9").

/// "0x" and the value's lower-case digits, at least `digits` of them: how packet marks and
/// masks (bit patterns) are written.
public func hex(_ value: UInt32, digits: Int = 1) -> String {
    "0x" + hexDigits(value, minimum: digits)
}

/// The value's digits, with leading zeros up to `minimum` (no "0x").
public func hexDigits(_ value: some BinaryInteger, minimum: Int = 1, uppercase: Bool = false) -> String {
    let digits = String(value, radix: 16, uppercase: uppercase)
    return String(repeating: "0", count: max(0, minimum - digits.count)) + digits
}

/// Two lower-case digits a byte, in order, with `separator` between bytes ("aa:bb:cc" for
/// a link-layer address, nothing for a key).
public func hexDigits(bytes: some Sequence<UInt8>, separator: String = "") -> String {
    bytes.map { hexDigits($0, minimum: 2) }.joined(separator: separator)
}
