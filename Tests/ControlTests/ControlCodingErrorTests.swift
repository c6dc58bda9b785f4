import Control
import Testing

/// An answer vpnctl or vpnexec cannot read (vpnd of another version) is said in one line of
/// words, not a DecodingError dump of coding paths and contexts (issue 43, item 5).
@Suite struct ControlCodingErrorTests {
    static func why(_ line: String) -> String {
        do {
            _ = try ControlCoding.decode(ControlResponse.self, from: Array(line.utf8))
            return "decoded"
        } catch {
            return ControlCoding.describe(error)
        }
    }

    @Test func decodingFailuresAreOneLineOfWords() {
        #expect(Self.why("{}") == "no key \"ok\"")
        #expect(Self.why("{\"ok\":true,\"profiles\":{}}").hasPrefix("profiles: "))
        #expect(Self.why("{\"ok\":true,\"profiles\":[{\"name\":\"work\"}]}") == "profiles.0: no key \"interface\"")
        for line in ["{}", "{\"ok\":true,\"profiles\":{}}", "not json", "{\"ok\":\"yes\"}"] {
            #expect(!Self.why(line).contains("\n") && !Self.why(line).contains("Context"), "\(line): \(Self.why(line))")
        }
    }
}
