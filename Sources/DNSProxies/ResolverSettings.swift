import DNS

/// What a profile's resolver is built from: a change rebuilds it.
struct ResolverSettings: Hashable {
    var configuration: DNSProxyConfiguration
    var mark: UInt32
    var steered: SteeredQueries
}
