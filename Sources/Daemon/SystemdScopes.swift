import CSystemd
import Descriptors
import Glibc
import Monotonic
import DaemonLoop

/// Where systemd owns the cgroup tree (it is PID 1 and the profiles' cgroups are its
/// `vpn.slice/vpn-NAME.slice`), a process joins a profile the way systemd-run --scope puts
/// one somewhere: a transient scope `vpnexec-NAME-PID.scope` in the profile's slice, asked
/// for over D-Bus (sd-bus) and reported done by systemd's JobRemoved signal. `systemctl
/// status`, systemd-cgls, accounting and limits then show and count it; vpnd does not write
/// cgroup.procs behind systemd's back. The scope lives under the system manager, in the
/// system's vpn.slice, because that slice's id is what the kernel's maps know; a user's own
/// manager would need vpnd to speak on that user's bus as that user.
///
/// The bus is one more source of the event loop: its descriptor, the events and timeout
/// sd-bus asks for; a request waits for its job without blocking the daemon.
final class SystemdScopes {
    private let bus: OpaquePointer
    private let loop: EventLoop
    private var timer: Int?
    private var jobSlot: OpaquePointer?
    /// Jobs asked for, by object path: what to do when systemd says they are done.
    private var waiting: [String: (String?) -> Void] = [:]
    /// Jobs that finished before their StartTransientUnit reply was read: path -> result
    /// (kept only while a request is in flight: systemd reports every job of the system).
    private var finished: [String: String] = [:]
    private var inFlight = 0

    /// nil where systemd is not PID 1 (containers without it, other inits): vpnd then moves
    /// processes itself.
    init?(loop: EventLoop) {
        guard sd_booted() > 0 else { return nil }
        var opened: OpaquePointer?
        guard sd_bus_open_system(&opened) >= 0, let opened else { return nil }
        bus = opened
        self.loop = loop
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard vx_match_job_removed(bus, &jobSlot, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            Unmanaged<SystemdScopes>.fromOpaque(userdata).takeUnretainedValue().jobRemoved(message)
            return 0
        }, me) >= 0, vx_subscribe(bus) >= 0 else {
            sd_bus_unref(bus)
            return nil
        }
        loop.watch(DescriptorNumber(borrowing: sd_bus_get_fd(bus)), events: Int16(sd_bus_get_events(bus))) { [unowned self] _ in process() }
        rearm()
    }

    deinit {
        loop.unwatch(DescriptorNumber(borrowing: sd_bus_get_fd(bus)))
        if let timer { loop.cancel(timer) }
        sd_bus_slot_unref(jobSlot)
        sd_bus_flush_close_unref(bus)
    }

    /// Asks systemd for `unit` in `slice` holding `pid`; `done` gets nil once the scope is
    /// running, or why it is not.
    func start(unit: String, slice: String, pid: Int32, description: String, done: @escaping (String?) -> Void) {
        final class Call {
            let scopes: SystemdScopes
            let done: (String?) -> Void
            init(_ scopes: SystemdScopes, _ done: @escaping (String?) -> Void) {
                self.scopes = scopes
                self.done = done
            }
        }
        inFlight += 1
        let finish = { [unowned self] (error: String?) in
            inFlight -= 1
            if inFlight == 0 { finished = [:] }
            done(error)
        }
        let call = Unmanaged.passRetained(Call(self, finish)).toOpaque()
        let rc = vx_start_scope(bus, nil, unit, slice, UInt32(pid), description, { message, userdata, _ in
            guard let userdata else { return 0 }
            let call = Unmanaged<Call>.fromOpaque(userdata).takeRetainedValue()
            call.scopes.started(message, done: call.done)
            return 0
        }, call)
        if rc < 0 {
            Unmanaged<Call>.fromOpaque(call).release()
            finish(SystemError("StartTransientUnit", code: -rc).description)
        }
        rearm()
    }

    private func started(_ message: OpaquePointer?, done: @escaping (String?) -> Void) {
        guard let message else { return done("no answer from systemd") }
        if let error = sd_bus_message_get_error(message), sd_bus_error_is_set(error) != 0 {
            return done("systemd refused the scope: \(error.pointee.message.map { String(cString: $0) } ?? "unknown error")")
        }
        guard let path = vx_read_object_path(message).map({ String(cString: $0) }) else { return done("systemd's answer had no job") }
        if let result = finished.removeValue(forKey: path) {
            done(result == "done" ? nil : "the scope's job ended \(result)")
        } else {
            waiting[path] = done
        }
    }

    private func jobRemoved(_ message: OpaquePointer) {
        var job: UnsafePointer<CChar>?, result: UnsafePointer<CChar>?
        guard vx_read_job_removed(message, &job, &result) >= 0, let job, let result else { return }
        let path = String(cString: job), outcome = String(cString: result)
        if let done = waiting.removeValue(forKey: path) {
            done(outcome == "done" ? nil : "the scope's job ended \(outcome)")
        } else if inFlight > 0 {
            finished[path] = outcome
        }
    }

    private func process() {
        while sd_bus_process(bus, nil) > 0 {}
        rearm()
    }

    /// The events and the deadline sd-bus wants next.
    private func rearm() {
        loop.setEvents(DescriptorNumber(borrowing: sd_bus_get_fd(bus)), Int16(truncatingIfNeeded: sd_bus_get_events(bus)))
        if let timer { loop.cancel(timer) }
        timer = nil
        var deadline: UInt64 = 0
        guard sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max else { return }
        // sd-bus's deadline is on CLOCK_MONOTONIC, in microseconds.
        let (nanoseconds, overflow) = deadline.multipliedReportingOverflow(by: 1000)
        timer = loop.after(MonotonicInstant(nanoseconds: overflow ? .max : nanoseconds).since(.now())) { [weak self] in
            self?.timer = nil
            self?.process()
        }
    }
}
