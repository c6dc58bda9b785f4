import CLinux
import Glibc

/// A joinable POSIX thread running a closure: the engine's loops need real threads that
/// block in system calls, not tasks on a cooperative pool (vpnd's exec guard too).
public final class LoopThread {
    private var thread = pthread_t()
    private final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }

    public init(name: String, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        _ = vx_pthread_setname(thread, String(name.prefix(15)))
    }

    public func join() { pthread_join(thread, nil) }
}
