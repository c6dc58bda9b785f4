import CNetlink

/// A netlink request under construction, built with libmnl into a buffer it owns.
final class NetlinkMessage {
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int
    let header: UnsafeMutablePointer<nlmsghdr>

    init(type: UInt16, flags: Int32, capacity: Int = 16384) {
        self.capacity = capacity
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        header = mnl_nlmsg_put_header(buffer)
        header.pointee.nlmsg_type = type
        header.pointee.nlmsg_flags = UInt16(flags)
    }

    deinit { buffer.deallocate() }

    var sequence: UInt32 {
        get { header.pointee.nlmsg_seq }
        set { header.pointee.nlmsg_seq = newValue }
    }

    /// Appends the fixed family header (rtmsg, ifinfomsg, fib_rule_hdr...) after nlmsghdr.
    func putFamilyHeader<T>(_ value: T) {
        let raw = mnl_nlmsg_put_extra_header(header, MemoryLayout<T>.size)!
        raw.storeBytes(of: value, as: T.self)
    }

    func put(_ type: UInt16, u8 value: UInt8) { mnl_attr_put_u8(header, type, value) }
    func put(_ type: UInt16, u32 value: UInt32) { mnl_attr_put_u32(header, type, value) }
    func put(_ type: UInt16, string value: String) { mnl_attr_put_strz(header, type, value) }
    func put(_ type: UInt16, bytes value: [UInt8]) {
        value.withUnsafeBytes { mnl_attr_put(header, type, $0.count, $0.baseAddress) }
    }

    /// An attribute holding the attributes `body` puts.
    func nest(_ type: UInt16, _ body: () -> Void) {
        let start = mnl_attr_nest_start(header, type)
        body()
        mnl_attr_nest_end(header, start)
    }

    /// A payload that is one of the kernel's fixed structs (fib_rule_port_range...), copied as
    /// it is in memory: the uapi structs are host byte order and have no padding to leak.
    func put<T>(_ type: UInt16, value: T) {
        withUnsafeBytes(of: value) { mnl_attr_put(header, type, $0.count, $0.baseAddress) }
    }

    var bytes: [UInt8] {
        Array(UnsafeRawBufferPointer(start: buffer, count: Int(header.pointee.nlmsg_len)))
    }
}

/// The attributes of a received message, copied out of the receive buffer so they can
/// outlive it. Nested attributes are parsed on demand from the copied payload.
struct NetlinkAttributes {
    private(set) var values: [UInt16: [UInt8]] = [:]

    init(message: UnsafePointer<nlmsghdr>, familyHeaderSize: Int) {
        let start = mnl_nlmsg_get_payload_offset(message, familyHeaderSize)!
        let end = mnl_nlmsg_get_payload_tail(message)!
        self.init(start: start, length: end - start)
    }

    init(payload: [UInt8]) {
        self.init()
        payload.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            self = NetlinkAttributes(start: base, length: raw.count)
        }
    }

    private init() {}

    private init(start: UnsafeRawPointer, length: Int) {
        var attribute = UnsafePointer(start.assumingMemoryBound(to: nlattr.self))
        var remaining = Int32(length)
        while mnl_attr_ok(attribute, remaining) {
            let type = mnl_attr_get_type(attribute)
            let size = Int(mnl_attr_get_payload_len(attribute))
            let payload = mnl_attr_get_payload(attribute)!
            values[type] = Array(UnsafeRawBufferPointer(start: payload, count: size))
            let next = UnsafePointer(mnl_attr_next(attribute)!)
            remaining -= Int32(UnsafeRawPointer(next) - UnsafeRawPointer(attribute))
            attribute = next
        }
    }

    subscript(type: UInt16) -> [UInt8]? { values[type] }

    func u8(_ type: UInt16) -> UInt8? { values[type]?.first }

    func u32(_ type: UInt16) -> UInt32? {
        guard let bytes = values[type], bytes.count >= 4 else { return nil }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
    }

    func u64(_ type: UInt16) -> UInt64? {
        guard let bytes = values[type], bytes.count >= 8 else { return nil }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    /// A payload that is one of the kernel's fixed structs (fib_rule_uid_range...); nil when
    /// it is absent or too short to hold one.
    func value<T>(_ type: UInt16, as: T.Type) -> T? {
        guard let bytes = values[type], bytes.count >= MemoryLayout<T>.size else { return nil }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }

    func string(_ type: UInt16) -> String? {
        guard let bytes = values[type] else { return nil }
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    func nested(_ type: UInt16) -> NetlinkAttributes? {
        values[type].map { NetlinkAttributes(payload: $0) }
    }
}

extension UnsafePointer where Pointee == nlmsghdr {
    /// The fixed family header that follows nlmsghdr.
    func familyHeader<T>(as type: T.Type) -> T {
        mnl_nlmsg_get_payload(self)!.loadUnaligned(as: T.self)
    }
}

/// libnftnl's attribute enums import either as typed enums or as plain integers,
/// depending on whether the C enum has a name; both become the UInt16 the API takes.
func attr<T: RawRepresentable>(_ value: T) -> UInt16 where T.RawValue: BinaryInteger { UInt16(value.rawValue) }
func attr(_ value: Int) -> UInt16 { UInt16(value) }

/// The same for the kernel's uapi constants (rtnetlink enums and #defines).
func cint<T: RawRepresentable>(_ value: T) -> Int where T.RawValue: BinaryInteger { Int(value.rawValue) }
func cint(_ value: Int) -> Int { value }
func cint(_ value: Int32) -> Int { Int(value) }
