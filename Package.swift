// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "vpnexec",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // System libraries (pkg-config names in the modulemaps' link lines).
        .systemLibrary(name: "CNetlink", pkgConfig: "libnftnl", providers: [.apt(["libnftnl-dev", "libmnl-dev"])]),
        .systemLibrary(name: "CCap", pkgConfig: "libcap", providers: [.apt(["libcap-dev"])]),
        .systemLibrary(name: "CLinux"),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // Pure values.
        .target(name: "Addresses"),
        .target(name: "Nftables"),

        // Effects: the kernel behind typed Swift.
        .target(name: "Netlink", dependencies: ["CNetlink", "Addresses", "Nftables"]),
        .target(name: "Cgroups"),

        // Tests. NetTestSupport builds namespaces, runs tools and cleans up after them.
        .target(name: "NetTestSupport", dependencies: ["CLinux"], path: "Tests/NetTestSupport"),
        .testTarget(name: "AddressesTests", dependencies: ["Addresses"]),
        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "Nftables", "Cgroups", "NetTestSupport"]),
    ]
)
