import Addresses
import DomainNames

/// One row of the table that makes a draft a profile (`ProfileDraft.fields`): where the value
/// is in the draft and how it goes into the profile. Rows are the counterpart of the key rows
/// that fill the draft (`ProfileDraft.keys`): a key added there and not here is read and lost.
struct ProfileField {
    let apply: (ProfileDraft, inout Profile) -> Void

    /// As read.
    static func copy<Value>(_ from: KeyPath<ProfileDraft, Value>, _ to: WritableKeyPath<Profile, Value>) -> ProfileField {
        ProfileField { draft, profile in profile[keyPath: to] = draft[keyPath: from] }
    }

    /// Made into what the profile holds.
    static func made<Value, Field>(_ from: KeyPath<ProfileDraft, Value>, _ to: WritableKeyPath<Profile, Field>,
                                   _ make: @escaping (Value) -> Field) -> ProfileField {
        ProfileField { draft, profile in profile[keyPath: to] = make(draft[keyPath: from]) }
    }

    /// A list's items each once, sorted; where each was written stays with the draft's checks.
    static func sortedOnce<Item: Hashable & Comparable>(_ from: KeyPath<ProfileDraft, [(Item, SourceLocation)]>,
                                                        _ to: WritableKeyPath<Profile, [Item]>) -> ProfileField {
        made(from, to) { Array(Set($0.map(\.0))).sorted() }
    }
}

extension ProfileDraft {
    /// What a profile takes from its draft, besides what `Profile.init` takes (name, tunnel,
    /// access, killswitch) and the index and table `Policy.assign` gives it.
    static var fields: [ProfileField] {
        [
            .copy(\.allowLAN, \.allowLAN),
            .copy(\.allowMulticast, \.allowMulticast),
            .made(\.routeNetworks, \.routeNetworks) { IPPrefix.covering($0.map(\.0)) },
            .sortedOnce(\.forwardInterfaces, \.forwardInterfaces),
            .sortedOnce(\.bypassExecutables, \.bypassExecutables),
            .sortedOnce(\.routeExecutables, \.routeExecutables),
            .copy(\.dnsServers, \.dnsServers),
            .made(\.bypassDomains, \.bypassDomains) { sortedOnce($0.map(\.0)) },
            .made(\.routeDomains, \.routeDomains) { sortedOnce($0.map(\.0)) },
            .made(\.apps, \.apps) { Array(Set($0)).sorted() },
            .copy(\.allowEncryptedDNS, \.allowEncryptedDNS),
            .copy(\.trusted, \.trusted),
            .copy(\.via, \.via),
            .copy(\.servers, \.servers),
            .copy(\.onDemand, \.onDemand),
            .copy(\.reconnect, \.reconnect),
            // Where each executable was first written, routed ones before bypassed ones.
            ProfileField { draft, profile in
                profile.executableLocations = Dictionary(draft.routeExecutables + draft.bypassExecutables, uniquingKeysWith: { first, _ in first })
            },
        ]
    }
}

/// Each pattern once, in the order of their text; the text is made once per pattern, not
/// once per comparison (a list may hold 100,000 names).
private func sortedOnce(_ patterns: [DomainPattern]) -> [DomainPattern] {
    Set(patterns).map { ($0.description, $0) }.sorted { $0.0 < $1.0 }.map(\.1)
}
