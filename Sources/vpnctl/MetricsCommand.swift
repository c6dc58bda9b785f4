import ArgumentParser
import Control
import Descriptors
import Glibc

extension VPNCtl {
    struct Metrics: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Counters and state in Prometheus' text format (for node_exporter's textfile collector).")
        @OptionGroup var connection: Connection
        @Option(help: ArgumentHelp("Write to this file (a temporary file beside it, then renamed: a collector never reads half of it) instead of standard output.", valueName: "file"))
        var output: String?

        func run() throws {
            guard let report = try connection.send(.status).status else { throw ExitCode(1) }
            let text = MetricsText.render(report, now: Double(time(nil)))
            guard let output else { return print(text, terminator: "") }
            do {
                try WholeFile.replace(output, with: Array(text.utf8))
            } catch {
                VPNCtl.fail("cannot write \(error)")
            }
        }
    }
}
