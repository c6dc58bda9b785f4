import DNS

/// When the elements the proxies added expire (`DNSElementLifetimes`), shared by them.
final class ElementLifetimes {
    var table = DNSElementLifetimes()
}
