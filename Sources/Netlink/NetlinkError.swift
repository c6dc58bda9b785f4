import Descriptors
import Glibc

/// A failed netlink operation: what we tried, the kernel's errno and, where the kernel
/// sent one (extended ack), its own explanation.
public struct NetlinkError: Error, CustomStringConvertible, Sendable {
    public var operation: String
    public var code: Int32
    public var kernelMessage: String?

    public init(_ operation: String, code: Int32, kernelMessage: String? = nil) {
        self.operation = operation
        self.code = code
        self.kernelMessage = kernelMessage
    }

    static func lastError(_ operation: String) -> NetlinkError {
        NetlinkError(operation, code: errno)
    }

    public var description: String {
        var text = SystemError(operation, code: code).description
        if let kernelMessage, !kernelMessage.isEmpty { text += " (\(kernelMessage))" }
        return text
    }
}
