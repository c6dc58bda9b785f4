import Glibc

/// A failed system call: what we tried and the errno text.
public struct SystemCallError: Error, CustomStringConvertible, Sendable {
    public var operation: String
    public var code: Int32

    public init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
