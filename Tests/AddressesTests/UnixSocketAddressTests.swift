import Addresses
import Glibc
import XCTest

final class UnixSocketAddressTests: XCTestCase {
    func testTheLongestPathThatFitsIsKeptWhole() throws {
        let path = "/" + String(repeating: "a", count: UnixSocketAddress.maximumLength - 1)
        let address = try UnixSocketAddress(path: path)
        let kept = address.withSockaddr { pointer, length -> String in
            XCTAssertEqual(Int(length), MemoryLayout<sockaddr_un>.size)
            XCTAssertEqual(Int32(pointer.pointee.sa_family), AF_UNIX)
            return UnsafeRawPointer(pointer).withMemoryRebound(to: sockaddr_un.self, capacity: 1) { un in
                withUnsafeBytes(of: un.pointee.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            }
        }
        XCTAssertEqual(kept, path)
        XCTAssertEqual(UnixSocketAddress.maximumLength, 107)
    }

    func testAPathThatDoesNotFitIsRefusedNotCut() {
        let path = "/" + String(repeating: "b", count: UnixSocketAddress.maximumLength)
        XCTAssertThrowsError(try UnixSocketAddress(path: path)) { error in
            XCTAssertTrue("\(error)".contains("too long (108 bytes"), "\(error)")
        }
    }

    func testEmptyAndNULPathsAreRefused() {
        XCTAssertThrowsError(try UnixSocketAddress(path: ""))
        XCTAssertThrowsError(try UnixSocketAddress(path: "/run/a\0b"))
    }
}
