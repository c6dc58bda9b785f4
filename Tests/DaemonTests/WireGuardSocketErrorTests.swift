@testable import Facts
import Descriptors
import Glibc
import Testing

/// Why a `wg` socket gave no transport, as status shows it after "did not answer: ".
@Suite struct WireGuardSocketErrorTests {
    @Test func eachCaseSaysWhyTheSocketDidNotAnswer() {
        #expect(WireGuardSocketError.system(SystemError("SO_PEERCRED", code: EINVAL)).description == "SO_PEERCRED: Invalid argument")
        #expect(WireGuardSocketError.nobodyListens(SystemError("connect", code: ECONNREFUSED)).description == "connect: Connection refused")
        #expect(WireGuardSocketError.answerTooLong(bytes: 65536).description == "answer longer than 65536 bytes")
        #expect(WireGuardSocketError.closedBeforeAnswering.description == "closed before answering")
        #expect(WireGuardSocketError.address(SystemError("socket path", code: ENAMETOOLONG)).description == "socket path: File name too long")
    }
}
