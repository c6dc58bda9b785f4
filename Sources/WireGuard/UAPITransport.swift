import Addresses

extension UAPI {
    /// What a device's `get=1` answer says about its transport: the UDP port its socket is
    /// bound to, the mark on that socket, and where its peers are. Read by vpnd, which
    /// keeps that socket out of every profile. Keys in the answer are skipped, never copied.
    public struct Transport: Sendable, Equatable {
        public var listenPort: UInt16
        /// nil: no mark (the answer has no `fwmark=` line, or it is 0).
        public var fwmark: UInt32?
        public var endpoints: [Endpoint]

        public init(listenPort: UInt16, fwmark: UInt32?, endpoints: [Endpoint]) {
            self.listenPort = listenPort
            self.fwmark = fwmark
            self.endpoints = endpoints
        }

        /// Parses a whole answer (ending with `errno=0` and an empty line). A failed get
        /// (`errno` not 0), a missing `listen_port` or a malformed value is an error.
        public static func parse(_ answer: UnsafeRawBufferPointer) throws(ProtocolError) -> Transport {
            var port: UInt16?
            var mark: UInt32?
            var endpoints: [Endpoint] = []
            var status: Int32?
            var start = 0
            while start < answer.count {
                var end = start
                while end < answer.count && answer[end] != 10 { end += 1 }
                let line = UnsafeRawBufferPointer(rebasing: answer[start..<end])
                start = end + 1
                guard !line.isEmpty else { break }
                guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else {
                    throw ProtocolError(message: "a line without '=' in the answer", code: .protocolViolation)
                }
                let key = String(decoding: line[..<equals], as: UTF8.self)
                // Only the values read below become strings: private_key and preshared_key never do.
                func value() -> String { String(decoding: line[(equals + 1)...], as: UTF8.self) }
                switch key {
                case "listen_port":
                    guard let parsed = UInt16(value()) else { throw ProtocolError(message: "listen_port \(Redaction.quoted(value())) is not a port") }
                    port = parsed
                case "fwmark":
                    guard let parsed = UInt32(value()) else { throw ProtocolError(message: "fwmark \(Redaction.quoted(value())) is not a 32-bit number") }
                    mark = parsed == 0 ? nil : parsed
                case "endpoint":
                    guard let spec = WgQuickConfig.EndpointSpec(value()), case let .address(address) = spec.host else {
                        throw ProtocolError(message: "endpoint \(Redaction.quoted(value())) is not address:port")
                    }
                    endpoints.append(Endpoint(address: address, port: spec.port))
                case "errno":
                    guard let parsed = Int32(value()) else { throw ProtocolError(message: "errno \(Redaction.quoted(value())) is not a number") }
                    status = parsed
                default:
                    continue
                }
            }
            guard let status else { throw ProtocolError(message: "the answer ended without errno=", code: .protocolViolation) }
            guard status == 0 else { throw ProtocolError(message: "get=1 failed", code: ErrorCode(abs(status))) }
            guard let port else { throw ProtocolError(message: "the answer has no listen_port") }
            return Transport(listenPort: port, fwmark: mark, endpoints: endpoints)
        }
    }

    /// Wipes an answer that held keys (a `get=1` answer has the private key).
    public static func wipe(_ answer: inout [UInt8]) { Zero.wipe(&answer) }
}
