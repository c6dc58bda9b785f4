/// `tunnel`: an interface someone else brings up (`interface`), or the built-in engine from a
/// wg-quick style file (`wireguard`, a list of files for several servers), and `via`.
extension ProfileDraft {
    static func readTunnel(_ reader: inout TableReader, profile: String, via: inout Via?, servers: inout ServerList?) -> Tunnel? {
        let context = reader.context
        guard let table = reader.table("tunnel") else {
            if reader.keyLocation("tunnel") == nil {
                reader.missing(["tunnel"], "\(context) has no tunnel; add e.g. tunnel.interface = \"wg0\"", at: reader.location)
            }
            return nil
        }
        var tunnelReader = TableReader(table, file: reader.file, context: "\(context) tunnel", log: reader.log)
        defer { tunnelReader.reportUnknownKeys() }
        via = readVia(&tunnelReader)
        let interface = tunnelReader.string("interface")
        if let (name, at) = interface, !validInterfaceName(name) {
            reader.log.error("\(context) tunnel.interface \"\(name)\" is not a valid interface name (1 to 15 characters, no '/', ':' or white space)", at: at)
            return nil
        }
        let listed = readServers(&tunnelReader, into: &servers)
        if case .some(nil) = listed { return nil }
        if let (config, at) = listed ?? tunnelReader.string("wireguard") {
            guard config.hasPrefix("/") else {
                reader.log.error("\(context) tunnel.wireguard \"\(config)\" must be an absolute path to a wg-quick style file", at: at)
                return nil
            }
            // The TUN interface vpnd creates: named by `interface`, else after the profile.
            let name = interface?.0 ?? String("vx-\(profile)".prefix(15))
            guard validInterfaceName(name) else {
                reader.log.error("\(context): the built-in tunnel needs an interface name; set tunnel.interface", at: at)
                return nil
            }
            return .wireguard(config: config, interface: name, location: at)
        }
        guard let (name, _) = interface else {
            if tunnelReader.keyLocation("interface") == nil && tunnelReader.keyLocation("wireguard") == nil {
                tunnelReader.missing(["interface", "wireguard"], "\(context) tunnel needs `interface` (an existing tunnel interface such as \"wg0\") or `wireguard` (a wg-quick style file for the built-in engine)",
                                     at: tunnelReader.location)
            }
            return nil
        }
        return .interface(name)
    }

    static func validInterfaceName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 15 && name != "." && name != ".."
            && !name.contains { $0 == "/" || $0 == ":" || $0.isWhitespace || $0 == "\"" }
    }
}
