import TOML

extension TableReader {
    /// `trusted`: an array of tables, written inline (`trusted = [{ ... }, ...]`) or as
    /// `[[profile.NAME.trusted]]`; both read the same. Each rule needs an action and at
    /// least one field to match; anything else is an error at its file:line.
    mutating func trustedRules(_ key: String) -> [TrustedRule] {
        guard let value = value(key) else { return [] }
        guard case let .array(items) = value.kind else {
            log.error("\(context) \(key) must be an array of rules such as [{ gateway_mac = \"02:00:5e:00:53:01\", action = \"disconnect\" }], not \(value.kind.typeNameWithArticle)",
                      at: location(value.position))
            return []
        }
        var rules: [TrustedRule] = []
        for (number, item) in items.enumerated() {
            let at = location(item.position)
            guard case let .table(table) = item.kind else {
                log.error("\(context) \(key): rule \(number + 1) must be a table ({ interface = \"eth0\", action = \"block\" }), not \(item.kind.typeNameWithArticle)", at: at)
                continue
            }
            var reader = TableReader(table, file: file, context: "\(context) \(key) rule \(number + 1)", log: log)
            if let rule = reader.trustedRule(at: at) { rules.append(rule) }
            reader.reportUnknownKeys()
        }
        return rules
    }

    private mutating func trustedRule(at: SourceLocation) -> TrustedRule? {
        var match = TrustedMatch()
        var valid = true
        if let (name, nameAt) = string("interface") {
            let stem = name.hasSuffix("*") ? String(name.dropLast()) : name
            if stem.isEmpty || stem.utf8.count > 15 || stem.contains(where: { $0 == "/" || $0 == ":" || $0 == "*" || $0.isWhitespace }) {
                log.error("\(context) interface \"\(name)\" must be an interface name (\"eth0\") or a prefix ending in * (\"wl*\")", at: nameAt)
                valid = false
            } else {
                match.interface = name
            }
        }
        if let (text, macAt) = string("gateway_mac") {
            if let mac = TrustedMatch.normalizedMAC(text) { match.gatewayMAC = mac } else {
                log.error("\(context) gateway_mac \"\(text)\" must be a link-layer address of six bytes, as in \"02:00:5e:00:53:01\"", at: macAt)
                valid = false
            }
        }
        if let (text, domainAt) = string("search_domain") {
            let domain = TrustedMatch.normalizedDomain(text)
            if domain.isEmpty || domain.contains(where: { $0.isWhitespace || $0 == "*" }) || domain.utf8.count > 253 {
                log.error("\(context) search_domain \"\(text)\" must be a domain name such as \"corp.example\" (no wildcard)", at: domainAt)
                valid = false
            } else {
                match.searchDomain = domain
            }
        }
        if let (text, ssidAt) = string("ssid") {
            // An SSID is 1 to 32 octets (IEEE 802.11).
            if text.isEmpty || text.utf8.count > 32 {
                log.error("\(context) ssid \"\(text)\" must be 1 to 32 bytes (a Wi-Fi network name)", at: ssidAt)
                valid = false
            } else {
                match.ssid = text
            }
        }
        var action: TrustedAction?
        if let (text, actionAt) = string("action") {
            action = TrustedAction(rawValue: text)
            if action == nil {
                log.error("\(context) action \"\(text)\" is not one of connect, disconnect, block", at: actionAt)
                valid = false
            }
        } else if keyLocation("action") == nil {
            missing(["action"], "\(context) has no action; add action = \"connect\", \"disconnect\" or \"block\"", at: at)
            valid = false
        }
        if match.isEmpty && valid {
            missing(TrustedMatch.keys, "\(context) matches nothing; give at least one of \(TrustedMatch.keys.joined(separator: ", "))", at: at)
            valid = false
        }
        guard valid, let action else { return nil }
        return TrustedRule(match: match, action: action, location: at)
    }
}
