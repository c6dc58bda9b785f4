import Glibc

/// A failed system call: what was being done and the errno it left.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let code: Int32

    /// Reads errno now: make it right after the call that failed.
    public init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    public var reason: String { String(cString: strerror(code)) }
    public var description: String { "\(operation): \(reason)" }
}
