import Control

extension StatusText {
    /// Multihop: which profile's tunnel carries this one's transport, and whether it can now.
    static func hop(_ via: HopStatus) -> String {
        let state = via.entryState == "up" ? "up" : "\(via.entryState): this tunnel's transport is held"
        return "  via       profile \(via.entry) (\(via.entryInterface): \(state)); \(traffic(via.carried)) of the transport carried into it"
    }
}
