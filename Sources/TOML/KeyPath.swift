import HexDigits

/// One part of a dotted key, with where it was written.
struct KeyComponent {
    var name: String
    var position: SourcePosition
}

/// Renders keys for messages the way they would be written in TOML, so that
/// an admin can search the file for what the message shows.
enum KeyPath {
    /// `a.b."c d"` style, from plain names.
    static func render(_ names: [String]) -> String {
        names.map(renderComponent).joined(separator: ".")
    }

    static func render(_ components: some Collection<KeyComponent>) -> String {
        render(components.map(\.name))
    }

    /// A key as `"name"` in a message; dotted keys keep their dots, and parts
    /// that need quoting in TOML use single quotes so the outer quotes stay
    /// unambiguous.
    static func quoted(_ names: [String]) -> String {
        "\"" + render(names) + "\""
    }

    static func quoted(_ components: some Collection<KeyComponent>) -> String {
        quoted(components.map(\.name))
    }

    static func renderComponent(_ name: String) -> String {
        if !name.isEmpty, name.utf8.allSatisfy(ASCII.isBareKeyByte) {
            return name
        }
        let needsEscapes = name.unicodeScalars.contains { scalar in
            scalar == "'" || scalar == "\"" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F
        }
        if !needsEscapes {
            return "'" + name + "'"
        }
        var result = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\u" + hexDigits(scalar.value, minimum: 4, uppercase: true)
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
