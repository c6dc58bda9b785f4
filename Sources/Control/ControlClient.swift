import Descriptors
import Launch

/// Sends one request to vpnd and returns its answer.
public enum ControlClient {
    /// `passing` is a descriptor sent along with the request.
    public static func send(_ request: ControlRequest, socketPath: String, passing: DescriptorNumber? = nil) throws(ControlClientError) -> ControlResponse {
        let answer = try ControlConnection.exchange(ControlCoding.encode(request), socketPath: socketPath, passing: passing)
        do {
            return try ControlCoding.decode(ControlResponse.self, from: answer)
        } catch {
            throw .notUnderstood(ControlCoding.describe(error))
        }
    }
}
