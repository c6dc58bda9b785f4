import Control
import JSON
import Launch

/// libFuzzer entry for the control protocol (scripts/fuzz builds it with
/// -sanitize=fuzzer,address): every input is what a local user could send to vpnd's
/// socket, framed as vpnd frames it (up to the first newline), and what vpnd could answer
/// a client. Nothing may crash or hang, and every request vpnd accepts must encode back to
/// the same request; the JSON values likewise.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let line = bytes.firstIndex(of: UInt8(ascii: "\n")).map { Array(bytes[..<$0]) } ?? bytes
    if let request = try? ControlCoding.decode(ControlRequest.self, from: line) {
        let encoded = ControlCoding.encode(request)
        guard let again = try? ControlCoding.decode(ControlRequest.self, from: Array(encoded.dropLast())), again == request else {
            fatalError("a decoded request does not survive encoding: \(request)")
        }
    }
    _ = try? ControlCoding.decode(ControlResponse.self, from: line)
    // vpnexec's reading of an answer, and the JSON reader under it (what a member's varlink
    // call to the names server is read by): what it accepts writes back to the same value.
    _ = try? LaunchMessages.answer(line)
    if let value = try? JSONValue(parsing: bytes) {
        guard let again = try? JSONValue(parsing: Array(value.encoded.utf8)), again == value else {
            fatalError("a parsed JSON value does not survive encoding: \(value)")
        }
    }
    return 0
}
