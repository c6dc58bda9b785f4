// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "vpnexec",
    products: [
        .executable(name: "vpnd", targets: ["vpnd"]),
        .executable(name: "vpnexec", targets: ["vpnexec"]),
        .executable(name: "vpnctl", targets: ["vpnctl"]),
        .executable(name: "vpn-server", targets: ["vpn-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // System libraries (pkg-config names in the modulemaps' link lines) and the Linux
        // calls Glibc's module leaves out.
        .systemLibrary(name: "CNetlink", pkgConfig: "libnftnl", providers: [.apt(["libnftnl-dev", "libmnl-dev"])]),
        .systemLibrary(name: "CCap", pkgConfig: "libcap", providers: [.apt(["libcap-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLinux"),
        // The version the commands answer to --version: scripts/install and scripts/package set
        // VPNEXEC_VERSION (git describe) for the build; a plain `swift build` says it does not know.
        .target(name: "BuildVersion", cSettings: Context.environment["VPNEXEC_VERSION"].map {
            [.define("VPNEXEC_VERSION", to: "\"\($0)\"")]
        } ?? []),

        // Pure: values and functions, unit-tested without a kernel.
        .target(name: "Addresses"),
        // Hexadecimal text: marks as "0x7f000000", bytes as digit pairs, code points.
        .target(name: "HexDigits"),
        // "Did you mean": the nearest of known words to a mistyped one (commands, wg-quick keys).
        .target(name: "Suggestions"),
        // eBPF instructions as values, assembled with named jump targets.
        .target(name: "BPF"),
        // The cgroup socket programs: what a member is at its sockets (birth mark, guard,
        // DNS to its proxy), and the settings each cgroup gives them; the namespace's
        // program that hands a query routed to loopback to its profile's proxy.
        .target(name: "SocketPrograms", dependencies: ["BPF", "Addresses"]),
        .target(name: "TOML", dependencies: ["HexDigits"]),
        .target(name: "Policy", dependencies: ["TOML", "Addresses", "DomainNames", "HexDigits"]),
        .target(name: "Nftables", dependencies: ["Addresses", "HexDigits"]),
        .target(name: "Routing", dependencies: ["Addresses", "HexDigits"]),
        .target(name: "Plan", dependencies: ["Policy", "Nftables", "Routing", "Addresses", "HexDigits", "SocketPrograms"]),
        // What vpnexec needs to ask for a launch, without Foundation (a launch pays for every
        // library a client starts with): the socket exchange, its two messages, the warnings.
        .target(name: "Launch", dependencies: ["CLinux", "Addresses", "Descriptors", "JSON"]),
        .target(name: "Control", dependencies: ["CLinux", "Addresses", "Descriptors", "HexDigits", "Launch", "Suggestions"]),
        // `vpnctl status` for people: the report in lines, internals only when asked.
        .target(name: "StatusPresentation", dependencies: ["Control", "HexDigits"]),
        // The WireGuard protocol: crypto, handshake, cookies, replay, timers, cryptokey routing.
        .target(name: "WireGuard", dependencies: ["CSodium", "Addresses", "Descriptors", "HexDigits", "Monotonic", "Suggestions"]),
        // The proxy is generic over its client type; specialized across modules, its hot
        // path runs without runtime generic metadata lookups.
        .target(name: "DNS", dependencies: ["Addresses", "DomainNames", "Monotonic"], swiftSettings: [.unsafeFlags(["-cross-module-optimization"])]),
        // Names and the patterns a policy writes for them: what both the policy and the DNS
        // proxy know of a name. Across modules as DNS is: the proxy compares names per query.
        .target(name: "DomainNames", swiftSettings: [.unsafeFlags(["-cross-module-optimization"])]),

        // Names follow the app: systemd-resolved's varlink calls (io.systemd.Resolve) read and
        // answered through a profile's DNS proxy, and the server a member's calls are sent to.
        // JSON as values, read and written without Foundation (the names server, vpnexec).
        .target(name: "JSON"),
        .target(name: "Names", dependencies: ["Addresses", "CLinux", "DNS", "Descriptors", "DomainNames", "JSON"]),

        // Effects: the kernel behind typed Swift.
        .target(name: "Netlink", dependencies: ["CNetlink", "Addresses", "Descriptors", "Nftables", "Routing"]),
        // One owner per open descriptor, and the errno of a failed call as a typed error.
        .target(name: "Descriptors"),
        // The one monotonic clock: an instant in nanoseconds, spans as Swift's Duration.
        .target(name: "Monotonic"),
        .target(name: "Cgroups", dependencies: ["CLinux", "Descriptors", "BPF", "SocketPrograms"]),
        // What vpnd and vpn-server both are: a service that logs for journald and keeps
        // only the capabilities it needs.
        .target(name: "ServiceSupport", dependencies: ["CCap", "CLinux", "Control", "Descriptors", "Launch"]),
        .target(name: "TrustedFiles", dependencies: ["Policy", "Descriptors"]),
        .target(name: "TunnelFiles", dependencies: ["Policy", "TrustedFiles", "WireGuard"]),
        .target(name: "Facts", dependencies: ["CSystemd", "Monotonic", "Addresses", "Descriptors", "Cgroups", "HexDigits", "Netlink", "Plan", "Policy", "Routing", "TunnelFiles", "WireGuard", "CLinux"]),
        .target(name: "WireGuardDevice", dependencies: ["WireGuard", "CLinux", "Addresses", "Descriptors", "HexDigits", "Monotonic", "Netlink", "Routing"]),
        // Members' network namespaces (containers): how each reaches the host, and their rows in status.
        .target(name: "Containers", dependencies: ["Cgroups", "Control", "Netlink", "Plan", "Routing", "SocketPrograms"]),
        // The daemon's one thread, and the kernel edge as the daemon's parts see it.
        .target(name: "DaemonLoop", dependencies: ["Addresses", "CLinux", "Descriptors", "Monotonic", "Names"]),
        .target(name: "Applying", dependencies: ["Descriptors", "Nftables", "Plan", "Routing", "SocketPrograms"]),
        // The profiles' DNS proxies at the edge: the steering sockets, each profile's resolver,
        // the sets filled before the answers, the names servers' lookups.
        .target(name: "DNSProxies", dependencies: ["Addresses", "Applying", "CLinux", "Cgroups", "Control", "DNS", "DaemonLoop", "Descriptors", "Monotonic", "Names", "Netlink", "Nftables", "Plan", "Policy", "ServiceSupport", "SocketPrograms"]),
        // The daemon's parts: exec rules (fanotify before the exec, exec events after).
        .target(name: "ExecRules", dependencies: ["Applying", "CCap", "CLinux", "Cgroups", "Control", "DaemonLoop", "Descriptors", "Facts", "Monotonic", "Netlink", "Plan", "Policy", "ServiceSupport", "TrustedFiles", "WireGuardDevice"]),
        // Trusted networks: the host's networks read, each profile's flip logged, its status.
        .target(name: "TrustedNetworks", dependencies: ["Addresses", "Control", "Facts", "Monotonic", "Netlink", "Plan", "Policy", "ServiceSupport", "TunnelFiles"]),
        // vpnd's own WireGuard tunnels: started and stopped with the policy, on demand, their
        // server choice and reconnection, and the profile tunnels' transports followed.
        .target(name: "Tunnels", dependencies: ["Addresses", "Control", "Facts", "HexDigits", "Launch", "Monotonic", "Netlink", "Nftables", "Plan", "Policy", "Routing", "ServiceSupport", "TunnelFiles", "WireGuard", "WireGuardDevice"]),
        .target(name: "Daemon", dependencies: ["DaemonLoop", "Applying", "DNSProxies", "ExecRules", "TrustedNetworks", "Tunnels", "SocketPrograms", "Containers", "Launch", "Names", "Addresses", "BuildVersion", "Descriptors", "HexDigits", "Monotonic", "ServiceSupport", "CCap", "DNS", "CLinux", "CSystemd", "Cgroups", "Control", "Facts", "TrustedFiles", "Netlink", "Nftables", "Plan", "Policy", "Routing", "TunnelFiles", "WireGuard", "WireGuardDevice"]),

        // Executables: thin commands over the libraries.
        .executableTarget(name: "vpnd", dependencies: ["BuildVersion", "Daemon", "ServiceSupport", "Control", "Launch", "Policy", "TrustedFiles", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Linked as a static executable: no dynamic loader, no shared libraries to map and
        // relocate at each launch (2.4 ms of start-up against 0.6 ms measured with perf stat).
        .executableTarget(name: "vpnexec", dependencies: ["BuildVersion", "Launch", "Descriptors", "CLinux"],
                          linkerSettings: [.unsafeFlags(["-static-executable"])]),
        .executableTarget(name: "vpn-server", dependencies: ["Monotonic", "BuildVersion", "Addresses", "HexDigits", "Descriptors", "WireGuard", "WireGuardDevice", "ServiceSupport", "Netlink", "Nftables", "Plan", "CSystemd", "CLinux", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(name: "vpnctl", dependencies: ["Addresses", "BuildVersion", "Names", "SocketPrograms", "Control", "Launch", "StatusPresentation", "Descriptors", "Facts", "HexDigits", "Plan", "Policy", "Suggestions", "TrustedFiles", "TunnelFiles", "Cgroups", "Netlink", .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // Tests. NetTestSupport builds namespaces, runs tools and cleans up after them.
        .target(name: "NetTestSupport", dependencies: ["CLinux", "Cgroups"], path: "Tests/NetTestSupport"),
        .testTarget(name: "AddressesTests", dependencies: ["Addresses"]),
        .testTarget(name: "HexDigitsTests", dependencies: ["HexDigits"]),
        .testTarget(name: "SuggestionsTests", dependencies: ["Suggestions"]),
        .testTarget(name: "TOMLTests", dependencies: ["TOML"], exclude: ["Fixtures"]),
        .testTarget(name: "PolicyTests", dependencies: ["Policy"]),
        .testTarget(name: "TrustedFilesTests", dependencies: ["TrustedFiles", "Policy", "NetTestSupport"]),
        .testTarget(name: "PlanTests", dependencies: ["SocketPrograms", "Plan", "Policy", "Nftables", "Routing", "Cgroups", "NetTestSupport", "Addresses", "DNS", "DomainNames"]),
        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "Nftables", "Routing", "Cgroups", "NetTestSupport", "Addresses"]),
        .testTarget(name: "CgroupsTests", dependencies: ["Cgroups", "NetTestSupport", "SocketPrograms", "Descriptors", "BPF", "CLinux", "Addresses"]),
        .testTarget(name: "WireGuardTests", dependencies: ["Monotonic", "WireGuard", "Addresses"]),
        .testTarget(name: "DNSTests", dependencies: ["Monotonic", "DNS", "DomainNames", "Addresses"]),
        .testTarget(name: "NamesTests", dependencies: ["Names", "JSON", "DNS", "DomainNames", "Addresses", "Descriptors"]),
        .testTarget(name: "MonotonicTests", dependencies: ["Monotonic"]),
        .testTarget(name: "DescriptorsTests", dependencies: ["Descriptors"]),
        .testTarget(name: "WireGuardDeviceTests", dependencies: ["Monotonic", "WireGuardDevice", "WireGuard", "Addresses", "Descriptors"]),
        .testTarget(name: "ExecRulesTests", dependencies: ["ExecRules", "Descriptors", "Facts", "Monotonic", "Plan", "Policy"]),
        .testTarget(name: "TrustedNetworksTests", dependencies: ["TrustedNetworks", "Addresses", "Monotonic", "Plan", "Policy", "ServiceSupport"]),
        .testTarget(name: "DaemonTests", dependencies: ["DaemonLoop", "Applying", "ExecRules", "SocketPrograms", "Daemon", "Launch", "Descriptors", "DNS", "Monotonic", "Facts", "ServiceSupport", "TrustedFiles", "Plan", "Policy", "Nftables", "Netlink", "Routing", "Addresses", "TunnelFiles", "NetTestSupport"]),
        .testTarget(name: "DNSProxiesTests", dependencies: ["DNSProxies", "DaemonLoop", "Applying", "Control", "DNS", "DomainNames", "Names", "Addresses", "CLinux", "Descriptors", "Monotonic", "Nftables", "Plan", "Policy", "ServiceSupport", "TrustedFiles", "NetTestSupport"]),
        .testTarget(name: "TunnelsTests", dependencies: ["Tunnels", "Addresses", "Control", "Monotonic", "Nftables", "Plan", "Policy", "Routing", "TunnelFiles", "WireGuard", "WireGuardDevice", "Launch", "TrustedFiles", "ServiceSupport"]),
        .testTarget(name: "ContainersTests", dependencies: ["Containers", "Addresses", "Control", "Plan", "Routing", "SocketPrograms"]),
        .testTarget(name: "ControlTests", dependencies: ["Control", "Launch", "JSON", "Addresses", "Descriptors"], exclude: ["Fixtures"]),
        .testTarget(name: "StatusPresentationTests", dependencies: ["StatusPresentation", "Control"]),
        .testTarget(name: "IntegrationTests", dependencies: ["NetTestSupport", "Control"]),
    ]
)
