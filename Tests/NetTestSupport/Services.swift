import Foundation

/// A TCP and UDP service on the server's service addresses that answers every client with
/// the source address it saw, and logs one line per connection or datagram ("tcp ADDR").
public final class Services: @unchecked Sendable {
    public let port: Int
    public let logPath: String

    init(topology: Topology, port: Int, cleanup: Cleanup) throws {
        self.port = port
        logPath = NSTemporaryDirectory() + "vx-seen-\(topology.tag)-\(port).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        cleanup.add("remove \(logPath)") { try? FileManager.default.removeItem(atPath: self.logPath) }
        let script = try PythonScript.write(PythonScript.reporter, cleanup: cleanup)
        let process = try BackgroundProcess(topology.server.enter + ["python3", script, logPath, String(port), Topology.service4, Topology.service6], cleanup: cleanup)
        try eventually("the reporting service to listen") {
            try topology.server.run(["ss", "-ltnH"]).contains(":\(port)") || !process.isRunning
        }
        guard process.isRunning else { throw TestEnvironmentError("reporting service failed: \(process.output)") }
    }

    /// Sources seen so far, one per connection or datagram, with the protocol.
    public func seen() -> [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    public func count(_ line: String) -> Int { seen().filter { $0 == line }.count }
}

/// Small Python programs for the test's far and near ends (python3 is installed by the
/// test command): they stand in for ordinary applications.
public enum PythonScript {
    public static func write(_ text: String, cleanup: Cleanup) throws -> String {
        let path = NSTemporaryDirectory() + "vx-\(uniqueTag()).py"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    public static let reporter = #"""
    import socket, sys, threading
    log_path, port, addrs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    lock = threading.Lock()
    def record(kind, addr):
        with lock, open(log_path, "a") as f:
            f.write(f"{kind} {addr}\n")
    def tcp(addr):
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port)); s.listen(64)
        while True:
            c, peer = s.accept()
            threading.Thread(target=serve, args=(c, peer[0]), daemon=True).start()
    def serve(c, peer):
        record("tcp", peer)
        try:
            c.sendall((peer + "\n").encode())
            # Echo the source again for every line the client sends (held connections).
            f = c.makefile("rb")
            for _ in f:
                c.sendall((peer + "\n").encode())
        except OSError:
            pass
        c.close()
    def udp(addr):
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((addr, port))
        while True:
            data, peer = s.recvfrom(2048)
            record("udp", peer[0])
            s.sendto((peer[0] + "\n").encode(), peer)
    for a in addrs:
        threading.Thread(target=tcp, args=(a,), daemon=True).start()
        threading.Thread(target=udp, args=(a,), daemon=True).start()
    threading.Event().wait()
    """#

    /// `probe.py MODE HOST PORT`: tcp (one connection, print the source the server saw),
    /// tcp-thread / tcp-fork (the same from a new thread / a forked child), udp-loop (a
    /// datagram every 10 ms forever), hold (connection A, then on a line from stdin
    /// connection B; prints "A <src>", "B <src>", "A-again <src>").
    public static let probe = #"""
    import os, socket, sys, threading, time
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    def ask():
        s = socket.create_connection((host, port), timeout=3)
        line = s.makefile("rb").readline().decode().strip()
        s.close()
        return line
    if mode == "tcp":
        print(ask(), flush=True)
    elif mode == "tcp-thread":
        out = []
        t = threading.Thread(target=lambda: out.append(ask())); t.start(); t.join()
        print(out[0], flush=True)
    elif mode == "tcp-fork":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, ask().encode()); os._exit(0)
        os.waitpid(pid, 0)
        print(os.read(r, 200).decode(), flush=True)
    elif mode == "udp-loop":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        while True:
            try:
                s.sendto(b"x", (host, port))
            except OSError:
                pass
            time.sleep(0.01)
    elif mode == "hold":
        a = socket.create_connection((host, port), timeout=5)
        af = a.makefile("rb")
        print("A", af.readline().decode().strip(), flush=True)
        sys.stdin.readline()
        print("B", ask(), flush=True)
        a.sendall(b"again\n")
        print("A-again", af.readline().decode().strip(), flush=True)
    """#
}
