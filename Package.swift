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
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // TOML v1.0.0 parser that keeps source positions for policy-file errors.
        .target(name: "TOML"),
        .testTarget(
            name: "TOMLTests",
            dependencies: ["TOML"],
            exclude: ["Fixtures"]
        ),
    ]
)
