import JSON

/// vpnexec's side of the control protocol (ControlRequest.exec and .bypass, the answer's
/// `ok`, `message` and `launch`), written and read without Foundation: the same bytes
/// Control's JSON coding makes and reads (ControlTests hold them to it).
public enum LaunchMessages {
    /// `{"exec":{"profile":NAME}}`, or `{"bypass":{}}` for nil, and the newline.
    public static func request(profile: String?) -> [UInt8] {
        let request: JSONValue = profile.map { .object([("exec", .object([("profile", .string($0))]))]) } ?? .object([("bypass", .object([]))])
        return Array(request.encoded.utf8) + [UInt8(ascii: "\n")]
    }

    /// What vpnexec reads of vpnd's answer.
    public struct Answer: Equatable, Sendable {
        public var ok: Bool
        public var message: String?
        public var launch: LaunchReport?

        public init(ok: Bool, message: String? = nil, launch: LaunchReport? = nil) {
            self.ok = ok
            self.message = message
            self.launch = launch
        }
    }

    public static func answer(_ line: [UInt8]) throws(ControlClientError) -> Answer {
        let value: JSONValue
        do { value = try JSONValue(parsing: line) } catch { throw ControlClientError.notUnderstood("\(error)") }
        guard let ok = value["ok"]?.bool else { throw ControlClientError.notUnderstood("no key \"ok\"") }
        let message = value["message"]?.string
        guard let launch = value["launch"], !launch.isNull else { return Answer(ok: ok, message: message, launch: nil) }
        guard let cgroups = launch["cgroups"]?.array?.compactMap(\.string), cgroups.count == launch["cgroups"]?.array?.count else {
            throw ControlClientError.notUnderstood("launch.cgroups: expected an array of strings")
        }
        var report = LaunchReport(cgroups: cgroups)
        if let held = launch["heldTunnel"], !held.isNull {
            guard let interface = held["interface"]?.string, let state = held["state"]?.string else {
                throw ControlClientError.notUnderstood("launch.heldTunnel: expected interface and state")
            }
            report.heldTunnel = HeldTunnel(interface: interface, state: state)
        }
        return Answer(ok: ok, message: message, launch: report)
    }
}
