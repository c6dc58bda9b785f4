/// How bypass.executables and route.executables are enforced (in a status when the policy
/// lists executables).
public struct ExecutableRulesStatus: Codable, Hashable, Sendable {
    /// Listed programs are placed before their first instruction (fanotify permission
    /// events), with exec events as a backstop.
    public static let beforeExec = "fanotify"
    /// Listed programs are moved after their exec (the process connector): until then they
    /// run where they were started.
    public static let afterExec = "exec-events"

    /// `beforeExec` or `afterExec`.
    public var enforcement: String
    /// Why fanotify permission events are not in force (nil when they are).
    public var fanotifyUnavailable: String?
    /// Why exec events are not followed (nil when they are).
    public var execEventsUnavailable: String?
    /// How long an exec of a listed program waits for vpnd at most (fanotify).
    public var answerDeadlineMilliseconds: Int
    /// Execs answered at that deadline: route.executables refused, bypass.executables
    /// allowed where they were started.
    public var refusedAtDeadline = 0
    public var allowedAtDeadline = 0
    /// Execs answered without a placement because the move failed.
    public var unplaced = 0
    /// Every listed path, in name order.
    public var files: [ListedExecutableStatus] = []

    public init(enforcement: String, answerDeadlineMilliseconds: Int) {
        self.enforcement = enforcement
        self.answerDeadlineMilliseconds = answerDeadlineMilliseconds
    }
}

/// One listed path as vpnd found it.
public struct ListedExecutableStatus: Codable, Hashable, Sendable {
    public var path: String
    /// Where a listed symbolic link leads (every link resolved): the file the rule is about.
    public var target: String?
    /// Whether its execs wait for vpnd (fanotify marks the file).
    public var marked: Bool
    /// A script ("#!"): matched when it is executed, and only with fanotify.
    public var script = false
    /// Why it matches nothing now (it does not exist, a directory, not executable), or why it
    /// could not be marked.
    public var problem: String?
    /// The file it names now: it changes when an upgrade replaces the file.
    public var device: UInt64?
    public var inode: UInt64?

    public init(path: String, target: String? = nil, marked: Bool) {
        self.path = path
        self.target = target
        self.marked = marked
    }

    /// "PATH" or "PATH -> TARGET".
    public var shown: String { target.map { "\(path) -> \($0)" } ?? path }
}
