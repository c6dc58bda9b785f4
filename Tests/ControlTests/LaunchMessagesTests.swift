import Control
import Launch
import Testing

/// vpnexec's messages, written and read without Foundation, held to what vpnd decodes and
/// encodes (Control's JSON coding): the same requests, the same answers.
@Suite struct LaunchMessagesTests {
    static let names = ["work", "a\"b\\c", "ünï/cödé", "tab\there", "line\nbreak", "\u{1}\u{1f}", "😀 emoji", ""]

    @Test(arguments: names) func aRequestIsWhatVpndDecodes(_ name: String) throws {
        #expect(try ControlCoding.decode(ControlRequest.self, from: LaunchMessages.request(profile: name)) == .exec(profile: name))
    }

    @Test func aBypassRequestIsWhatVpndDecodes() throws {
        #expect(try ControlCoding.decode(ControlRequest.self, from: LaunchMessages.request(profile: nil)) == .bypass)
        #expect(LaunchMessages.request(profile: "work") == ControlCoding.encode(ControlRequest.exec(profile: "work")), "the same bytes as vpnctl's coding")
    }

    @Test(arguments: [
        ControlResponse(ok: true, launch: LaunchReport(cgroups: ["vpn.slice/vpn-work.slice", "user.slice/ü \"x\""])),
        ControlResponse(ok: true, launch: LaunchReport(cgroups: [], heldTunnel: HeldTunnel(interface: "wg0", state: HeldTunnel.heldDown))),
        ControlResponse(ok: false, message: "you (uid 1000) may not use profile work: [profile.work] users = [1001] (policy 10-work.toml:3)"),
        ControlResponse(ok: true),
        ControlResponse(ok: true, profiles: []),
    ]) func anAnswerReadsAsVpndEncodedIt(_ response: ControlResponse) throws {
        let answer = try LaunchMessages.answer(ControlCoding.encode(response))
        #expect(answer == LaunchMessages.Answer(ok: response.ok, message: response.message, launch: response.launch))
    }

    @Test(arguments: [
        ("", "a value expected at byte 0"),
        ("{\"ok\":tru}", "expected true at byte 9"),
        ("{\"ok\":true", "an object not closed at byte 10"),
        ("{\"ok\":true} x", "text after the value at byte 12"),
        ("{\"message\":\"\\ud800\"}", "a lone surrogate at byte 18"),
        ("{\"message\":\"a\u{1}\"}", "a control character in a string at byte 14"),
        ("{\"message\":\"\\q\"}", "an unknown escape at byte 14"),
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), "nested deeper than 64 at byte 64"),
    ]) func malformedJSONIsRefusedWithWhere(_ text: String, _ reason: String) {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(text.utf8)) }
        do { _ = try JSONReader.parse(Array(text.utf8)) } catch { #expect(error.description == reason) }
    }

    @Test func escapesAndNumbersRead() throws {
        let value = try JSONReader.parse(Array(#" {"a": ["\u00fc\ud83d\ude00\/\n", -1.5e3, true, false, null, {}]} "#.utf8))
        #expect(value == .object(["a": .array([.string("ü😀/\n"), .number(-1500), .bool(true), .bool(false), .null, .object([:])])]))
    }

    @Test func anAnswerWithoutOkOrWithABadLaunchIsNotUnderstood() {
        for line in [#"{"message":"x"}"#, #"{"ok":true,"launch":{"cgroups":[1]}}"#, #"{"ok":true,"launch":{"cgroups":[],"heldTunnel":{"state":"down"}}}"#] {
            #expect(throws: ControlClientError.self) { try LaunchMessages.answer(Array(line.utf8)) }
        }
    }
}
