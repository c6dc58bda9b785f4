/// One step of a rule, in the order nft evaluates it. The cases are exactly what the
/// policy compiler needs; each has one text form and one expression encoding.
public enum NftStatement: Hashable, Sendable {
    /// `meta mark & mask == value` (or `!=`).
    case markMatch(mask: UInt32, value: UInt32, negated: Bool)
    /// `oifname "name"` (or `!=`): by name, so it holds for an interface that is
    /// deleted and re-created with a new index.
    case outputInterfaceName(String, negated: Bool)
    /// `iifname "name"` (or `!=`): where a forwarded packet came in.
    case inputInterfaceName(String, negated: Bool)
    /// `meta mark set meta mark & ~clear | set`: touches only the bits under `clear`.
    case setMark(clear: UInt32, set: UInt32)
    /// `counter name "x"`: a reference to a named counter object.
    case namedCounter(String)
    /// `ct mark set ct mark & ~clear | set`: the connection remembers the profile.
    case setConntrackMark(clear: UInt32, set: UInt32)
    /// `socket cgroupv2 level L vmap @map`.
    case cgroupVerdictMap(level: UInt32, map: String)
    /// `meta mark & mask vmap @map`.
    case markVerdictMap(mask: UInt32, map: String)
    /// `ct mark & mask vmap @map`.
    case conntrackMarkVerdictMap(mask: UInt32, map: String)
    case masquerade
    case verdict(NftVerdict)
}
