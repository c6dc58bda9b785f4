public enum ControlSocket {
    public static let defaultPath = "/run/vpnexec/vpnd.sock"

    /// --socket, else $VPNEXEC_SOCKET, else the default.
    public static func path(option: String?, environment: [String: String]) -> String {
        option ?? environment["VPNEXEC_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath
    }
}
