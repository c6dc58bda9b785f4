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

    /// What errno `code` means ("Invalid argument").
    public static func reason(of code: Int32) -> String { String(cString: strerror(code)) }

    public var reason: String { Self.reason(of: code) }
    public var description: String { "\(operation): \(reason)" }
}
