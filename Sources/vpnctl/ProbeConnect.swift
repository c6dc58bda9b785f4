import Addresses
import Control
import Descriptors
import Glibc

/// `vpnctl explain -p NAME --probe HOST:PORT`: vpnctl runs itself through vpnexec (so vpnd
/// places the child in the profile as any launch), the child connects and prints the local
/// address the kernel gave its socket, and the parent compares it with the tunnel's.
enum ProbeConnect {
    /// The child's one line: "local ADDRESS connected", "local ADDRESS failed: WHY", or
    /// "error: WHY" (no socket or no local address).
    static func run(_ text: String) -> String {
        guard let endpoint = ExplainedProbe.target(text) else { return "error: not ADDRESS:PORT: \(text)" }
        let family = endpoint.address.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "error: socket: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        // Non-blocking: the kernel picks the source as the connect starts, read before a
        // refusal resets it; the answer is waited for 5 s at most.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let started = endpoint.withSockaddr { connect(fd, $0, $1) } == 0
        var why = started || errno == EINPROGRESS ? "" : String(cString: strerror(errno))
        let local = Endpoint.local(of: fd)
        if !started, why.isEmpty {
            var wait = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&wait, 1, 5000) <= 0 {
                why = "no answer within 5 s"
            } else {
                var failure: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size)
                if failure != 0 { why = String(cString: strerror(failure)) }
            }
        }
        guard let address = local?.address, !address.bytes.allSatisfy({ $0 == 0 }) else {
            return "error: " + (why.isEmpty ? "no local address" : why)
        }
        return "local \(address) " + (why.isEmpty ? "connected" : "failed: \(why)")
    }

    /// Runs the child through vpnexec (next to vpnctl, else on PATH) and reads its line.
    static func launch(_ text: String, profile: String, socket: String, tunnelAddresses: [String]) -> ExplainedProbe {
        var probe = ExplainedProbe(target: text)
        let own = executablePath()
        let directory = own.map { String($0[..<($0.lastIndex(of: "/") ?? $0.startIndex)]) }
        let beside = directory.map { $0 + "/vpnexec" }
        let vpnexec = beside.flatMap { access($0, X_OK) == 0 ? $0 : nil } ?? "vpnexec"
        let arguments = [vpnexec, "--socket", socket, "-p", profile, "--", own ?? "vpnctl", "explain", "--probe-connect", text]
        switch spawn(arguments) {
        case let .failure(why):
            probe.error = why.description
        case let .success(output):
            return probe.reading(output, tunnelAddresses: tunnelAddresses)
        }
        return probe
    }

    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Its standard output, once it exited 0; its standard error stays the user's.
    static func spawn(_ arguments: [String]) -> Result<String, ProbeFailure> {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return .failure(ProbeFailure("pipe: \(String(cString: strerror(errno)))")) }
        // Neither end is the child's but as its standard output (dup2 clears the flag there).
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawnp(&child, arguments[0], &actions, nil, &argv, environ)
        close(pipeEnds[1])
        defer { close(pipeEnds[0]) }
        guard spawned == 0 else { return .failure(ProbeFailure("cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = retryingInterrupted { read(pipeEnds[0], &buffer, buffer.count) }
            guard count > 0 else { break }
            output += buffer[..<count]
        }
        var status: Int32 = 0
        _ = retryingInterrupted { waitpid(child, &status, 0) }
        let text = String(decoding: output, as: UTF8.self)
        let exited = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        if exited != 0, !text.contains("local ") { return .failure(ProbeFailure("vpnexec -p exited \(exited) (said above)")) }
        return .success(text)
    }

    struct ProbeFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
