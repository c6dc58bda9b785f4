/// A count with its noun in the number it takes: "1 process", "2 processes", "0 packets".
/// Every count vpnctl says goes through here (vpnd's answers it prints too), so that none
/// reads "process(es)".
public enum Plural {
    /// `plural` defaults to `singular` + "s"; irregular ones ("process", "address") give it.
    public static func count<Count: BinaryInteger>(_ count: Count, _ singular: String, _ plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
    }
}
