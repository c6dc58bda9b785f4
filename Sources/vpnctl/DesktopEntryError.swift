/// An application's desktop entry `vpnctl desktop` makes no launcher of.
enum DesktopEntryError: Error, CustomStringConvertible, Equatable {
    /// Not Type=Application, or without an Exec= to run through vpnexec.
    case notAnApplication

    var description: String {
        switch self {
        case .notAnApplication: "not an application with a command (Type=Application and Exec=)"
        }
    }
}
