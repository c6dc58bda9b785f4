import Foundation
import NetTestSupport
import Testing

/// The man pages as `man` shows them (groff, as Debian 12's man-db runs it): headed by their
/// volume, not "BSD General Commands Manual", footed by vpnexec, no groff warnings, and no
/// paragraph whose parentheses do not pair.
@Suite struct ManPageTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/man").standardized.path

    @Test func pagesRenderWithTheirVolumeFooterAndPairedParentheses() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.directory).filter { $0.range(of: #"\.[158]$"#, options: .regularExpression) != nil }.sorted()
        #expect(pages == ["vpn-server.8", "vpnctl.8", "vpnd.8", "vpnexec-policy.5", "vpnexec.1"])
        let volumes = ["1": "General Commands Manual", "5": "File Formats Manual", "8": "System Manager's Manual"]
        for page in pages {
            let path = Self.directory + "/" + page
            let warnings = try Command.status(["groff", "-mandoc", "-ww", "-z", path])
            #expect(warnings.status == 0 && warnings.stderr.isEmpty, "\(page): \(warnings.stderr)")
            // Plain text: no overstrike, no SGR escapes.
            let text = try Command.run(["groff", "-mandoc", "-Tutf8", "-P-cbou", path], environment: ["LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"])
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            let header = lines.first ?? "", footer = lines.last ?? ""
            #expect(!header.contains("BSD") && header.contains(volumes[String(page.suffix(1))]!), "\(page) header: \(header)")
            #expect(footer.hasPrefix("vpnexec ") && footer.hasSuffix(" vpnexec") && !footer.contains("BSD"), "\(page) footer: \(footer)")
            for paragraph in text.components(separatedBy: "\n\n") {
                var depth = 0, fell = false
                for character in paragraph {
                    if character == "(" { depth += 1 }
                    if character == ")" { depth -= 1; fell = fell || depth < 0 }
                }
                #expect(depth == 0 && !fell, "\(page): unpaired parentheses in:\n\(paragraph)")
            }
        }
    }
}
