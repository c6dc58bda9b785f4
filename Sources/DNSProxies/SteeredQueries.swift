/// Which steered queries a profile's resolver takes: those routed from its address (`key`)
/// that carry its mark under `mask` (or no mark at all, for the system profile). Another
/// mark is a socket bound to the address by hand, or another profile's member: dropped
/// and counted, as it must not fill this profile's sets.
struct SteeredQueries: Hashable {
    var key: UInt32
    var mask: UInt32
    var marks: [UInt32]

    func accepts(_ mark: UInt32?) -> Bool {
        guard let mark else { return false }
        return marks.contains { $0 == 0 ? mark == 0 : mark & mask == $0 }
    }
}
