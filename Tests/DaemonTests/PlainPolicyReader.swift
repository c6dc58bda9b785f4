import Foundation
import Policy
@testable import Daemon

extension PolicyReader {
    /// The folder's `*.toml` files in name order, without vpnd's ownership checks (the
    /// folder is the test's own): the daemon's unit tests run without root.
    static let plain = PolicyReader { directory in
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".toml") }.sorted().map { name in
            PolicySource(path: directory + "/" + name, text: try String(contentsOfFile: directory + "/" + name, encoding: .utf8))
        }
    }
}
