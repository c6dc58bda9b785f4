import Suggestions
import Testing

/// `vpnctl stauts` names the command meant (issue 43, item 9).
@Suite struct SuggestionTests {
    static let commands = ["status", "profiles", "members", "metrics", "plan", "reload", "check", "move", "desktop", "up", "down", "teardown"]

    @Test func typosFindTheCommand() {
        #expect(Suggestion.closest(to: "stauts", among: Self.commands) == "status", "a swap is one edit")
        #expect(Suggestion.closest(to: "statsu", among: Self.commands) == "status")
        #expect(Suggestion.closest(to: "profile", among: Self.commands) == "profiles")
        #expect(Suggestion.closest(to: "relaod", among: Self.commands) == "reload")
        #expect(Suggestion.closest(to: "tear", among: Self.commands) == nil, "four edits from teardown: no guess")
        #expect(Suggestion.closest(to: "frobnicate", among: Self.commands) == nil)
    }

    @Test func distanceCountsEdits() {
        #expect(Suggestion.distance("status", "status") == 0)
        #expect(Suggestion.distance("stauts", "status") == 1)
        #expect(Suggestion.distance("", "up") == 2)
        #expect(Suggestion.distance("dwn", "down") == 1)
        #expect(Suggestion.distance("kitten", "sitting") == 3)
    }
}
