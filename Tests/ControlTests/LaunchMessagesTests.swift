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

    /// What is not JSON (the reader is JSONTests' and ResolveCallTests') is an answer this
    /// client does not understand, said as such.
    @Test(arguments: ["", "{\"ok\":tru}", "{\"ok\":true", "{\"ok\":true} x", String(repeating: "[", count: 65) + String(repeating: "]", count: 65)])
    func malformedJSONIsNotUnderstood(_ text: String) {
        #expect(throws: ControlClientError.self) { try LaunchMessages.answer(Array(text.utf8)) }
        do { _ = try LaunchMessages.answer(Array(text.utf8)) } catch {
            #expect(error.description.hasPrefix("vpnd sent an answer this client does not understand ("), "\(error)")
        }
    }

    @Test func anAnswerWithoutOkOrWithABadLaunchIsNotUnderstood() {
        for line in [#"{"message":"x"}"#, #"{"ok":true,"launch":{"cgroups":[1]}}"#, #"{"ok":true,"launch":{"cgroups":[],"heldTunnel":{"state":"down"}}}"#] {
            #expect(throws: ControlClientError.self) { try LaunchMessages.answer(Array(line.utf8)) }
        }
    }
}
