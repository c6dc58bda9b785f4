/// A domain in a policy's `bypass.domains` or `route.domains`: `bank.example` is that name
/// only; `*.corp.example` is every name strictly below corp.example (not corp.example
/// itself, which a policy lists separately if it means it). Case and a trailing dot do not
/// matter. Internationalised names are written in their ASCII (punycode, `xn--`) form, as
/// they travel in DNS; accepting Unicode here would need IDNA mapping rules we do not carry.
/// A label is letters, digits, "-" and "_" and neither starts nor ends with "-" (RFC 1123's
/// host names; "_" stays for the service names that use it, and "--" inside stays for
/// `xn--` and hosts such as `r3---sn-x.googlevideo.com`). The last label is not all digits
/// (RFC 3696: no top-level domain is), which is how an IPv4 address written here is caught:
/// a name pattern would never match it.
public struct DomainPattern: Hashable, Sendable, CustomStringConvertible {
    public enum Scope: Hashable, Sendable {
        /// The name itself.
        case exactly
        /// Names with at least one more label (the `*.` form).
        case below
    }

    public let scope: Scope
    /// In lower case.
    public let domain: DomainName

    /// The longest name in presentation form without its trailing dot (255 in wire form).
    public static let maxLength = 253

    public init(_ text: String) throws(DomainPatternError) {
        func refuse(_ reason: DomainPatternError.Reason) -> DomainPatternError { DomainPatternError(pattern: text, reason: reason) }
        var body = Substring(text)
        if body.hasSuffix(".") { body = body.dropLast() }
        guard !body.isEmpty else { throw refuse(.empty) }
        guard body.utf8.allSatisfy({ $0 < 0x80 }) else { throw refuse(.notASCII) }
        guard body.utf8.count <= Self.maxLength else { throw refuse(.tooLong(body.utf8.count)) }
        var scope = Scope.exactly
        if body == "*" { throw refuse(.wildcardAlone) }
        if body.hasPrefix("*.") {
            scope = .below
            body = body.dropFirst(2)
        }
        var labels: [[UInt8]] = []
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else { throw refuse(.emptyLabel) }
            guard label.utf8.count <= 63 else { throw refuse(.labelTooLong(String(label))) }
            for character in label.utf8 where !Self.allowed(character) {
                throw refuse(character == UInt8(ascii: "*") ? .misplacedWildcard : .invalidCharacter(Character(UnicodeScalar(character))))
            }
            if label.hasPrefix("-") || label.hasSuffix("-") { throw refuse(.hyphenAtLabelEdge(String(label))) }
            labels.append(label.utf8.map(ASCIICase.lower))
        }
        if let last = labels.last, last.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { throw refuse(.numericTopLabel) }
        self.scope = scope
        self.domain = DomainName(labels: labels)!
    }

    /// As a policy would write it, in lower case.
    public var description: String {
        let name = String(domain.description.dropLast())
        return scope == .below ? "*." + name : name
    }

    private static func allowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

/// Why a policy's domain is not a pattern, worded for whoever wrote the policy (the policy
/// reader adds file and line).
public struct DomainPatternError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case empty
        case emptyLabel
        case labelTooLong(String)
        case tooLong(Int)
        case invalidCharacter(Character)
        case notASCII
        case misplacedWildcard
        case wildcardAlone
        case hyphenAtLabelEdge(String)
        case numericTopLabel
    }

    public var pattern: String
    public var reason: Reason

    public var description: String {
        let quoted = "domain \"\(pattern)\""
        switch reason {
        case .empty:
            return "a domain is empty (or only the root, \".\")"
        case .emptyLabel:
            return "\(quoted) has an empty label (a leading dot or two dots in a row)"
        case let .labelTooLong(label):
            return "\(quoted) has a label of \(label.utf8.count) characters (\"\(label.prefix(16))...\"); a label has at most 63"
        case let .tooLong(length):
            return "\(quoted) has \(length) characters; a domain name has at most \(DomainPattern.maxLength)"
        case let .invalidCharacter(character):
            return "\(quoted) contains \"\(character)\"; labels are letters, digits, \"-\" and \"_\""
        case .notASCII:
            return "\(quoted) is not ASCII; write an internationalised name in its xn-- (punycode) form, e.g. xn--bcher-kva.example for bücher.example"
        case .misplacedWildcard:
            return "\(quoted) has \"*\" where it cannot be; \"*\" is only allowed as the whole first label, as in \"*.corp.example\""
        case .wildcardAlone:
            return "\(quoted) would match every name; a wildcard needs a domain after it, as in \"*.corp.example\""
        case let .hyphenAtLabelEdge(label):
            return "\(quoted) has the label \"\(label)\", which starts or ends with \"-\"; a label starts and ends with a letter or digit"
        case .numericTopLabel:
            return "\(quoted) ends in an all-numeric label, as an IPv4 address does; a domain pattern is a name (addresses and networks go in route.networks)"
        }
    }
}
