import Foundation

/// dnspython, run as a subprocess, as the independent implementation the codec is compared
/// with. It fails (never skips) when python3 or dnspython is missing: scripts/install-deps
/// installs it. Messages travel as hex lines; each is described on one line in a format
/// both sides print the same way (see `describe` in DNSTestSupport.swift).
enum Dnspython {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `count` random messages made and compressed by dnspython, with its description of each.
    static func generate(count: Int, seed: Int) throws -> [(wire: [UInt8], description: String)] {
        try run(["generate", String(count), String(seed)], input: "").map { line in
            let parts = line.split(separator: "\t", maxSplits: 1)
            guard parts.count == 2, let wire = unhex(String(parts[0])) else { throw Failure(description: "bad oracle line: \(line)") }
            return (wire, String(parts[1]))
        }
    }

    /// dnspython's description of each message, or "error <exception>" where it refuses one.
    static func describe(_ messages: [[UInt8]]) throws -> [String] {
        let lines = try run(["describe"], input: messages.map { hex($0) + "\n" }.joined())
        guard lines.count == messages.count else { throw Failure(description: "dnspython described \(lines.count) of \(messages.count) messages") }
        return lines
    }

    private static func run(_ arguments: [String], input: String) throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dns-oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputURL = directory.appendingPathComponent("in"), outputURL = directory.appendingPathComponent("out")
        let errorURL = directory.appendingPathComponent("err")
        try Data(input.utf8).write(to: inputURL)
        try Data().write(to: outputURL)
        try Data().write(to: errorURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot run python3 for the dnspython comparison (scripts/install-deps installs it): \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let errorText = String(decoding: try Data(contentsOf: errorURL), as: UTF8.self)
            throw Failure(description: "dnspython oracle failed with status \(process.terminationStatus) (python3 -m pip install dnspython, or scripts/install-deps): \(errorText)")
        }
        return String(decoding: try Data(contentsOf: outputURL), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static let script = #"""
import random, sys
import dns.edns, dns.message, dns.name, dns.rdata, dns.rrset
from dns.rdtypes.ANY.CNAME import CNAME
from dns.rdtypes.ANY.MX import MX
from dns.rdtypes.ANY.NS import NS
from dns.rdtypes.ANY.PTR import PTR
from dns.rdtypes.ANY.SOA import SOA
from dns.rdtypes.ANY.TXT import TXT
from dns.rdtypes.IN.A import A
from dns.rdtypes.IN.AAAA import AAAA

SPECIAL = b'.\\"();@$'

def name_text(name):
    if len(name.labels) == 1:
        return "."
    out = ""
    for label in name.labels[:-1]:
        for b in label:
            if b in SPECIAL:
                out += "\\" + chr(b)
            elif 0x21 <= b <= 0x7E:
                out += chr(b)
            else:
                out += "\\%03d" % b
        out += "."
    return out

def rr_text(rrset):
    (rd,) = list(rrset)
    if rrset.rdtype == 5:
        data = name_text(rd.target)
    else:
        data = rd.to_wire().hex()
    return "%s %d %d %d %s" % (name_text(rrset.name), rrset.rdclass, rrset.ttl, rrset.rdtype, data)

def describe(m):
    parts = ["id=%d flags=%d" % (m.id, m.flags)]
    parts += ["q=%s %d %d" % (name_text(q.name), q.rdtype, q.rdclass) for q in m.question]
    for tag, section in (("an", m.answer), ("ns", m.authority), ("ar", m.additional)):
        parts += ["%s=%s" % (tag, rr_text(rr)) for rr in section]
    if m.edns >= 0:
        ttl = m.opt.ttl
        opts = ",".join("%d:%s" % (o.otype, o.to_wire().hex()) for o in m.options)
        parts.append("edns=%d %d %d %d %s" % (m.payload, ttl >> 24, (ttl >> 16) & 0xFF, ttl & 0xFFFF, opts))
    return " | ".join(parts)

def parse(wire):
    return dns.message.from_wire(wire, one_rr_per_rrset=True)

LABELS = [b"www", b"WWW", b"example", b"Example", b"cdn", b"corp", b"a", b"b-c", b"_tcp",
          b"xn--bcher-kva", b"a.b", b"\x00\xff", b"sp ace", b"x" * 63]

def random_name(rng):
    while True:
        labels = [rng.choice(LABELS) for _ in range(rng.randint(0, 4))]
        if sum(1 + len(label) for label in labels) + 1 <= 255:
            return dns.name.Name(labels + [b""])

def random_record(rng):
    name = random_name(rng)
    kind = rng.randrange(9)
    if kind == 0:
        rd = A(1, 1, "%d.%d.%d.%d" % tuple(rng.randrange(256) for _ in range(4)))
    elif kind == 1:
        rd = AAAA(1, 28, ":".join("%x" % rng.randrange(65536) for _ in range(8)))
    elif kind == 2:
        rd = CNAME(1, 5, random_name(rng))
    elif kind == 3:
        rd = MX(1, 15, rng.randrange(65536), random_name(rng))
    elif kind == 4:
        rd = NS(1, 2, random_name(rng))
    elif kind == 5:
        rd = PTR(1, 12, random_name(rng))
    elif kind == 6:
        rd = SOA(1, 6, random_name(rng), random_name(rng), *(rng.randrange(2**32) for _ in range(5)))
    elif kind == 7:
        rd = TXT(rng.choice([1, 3]), 16, [bytes(rng.randrange(256) for _ in range(rng.randrange(20)))])
    else:
        rd = dns.rdata.GenericRdata(1, 65280, bytes(rng.randrange(256) for _ in range(rng.randrange(30))))
    rrset = dns.rrset.RRset(name, rd.rdclass, rd.rdtype)
    rrset.update_ttl(rng.choice([0, 1, 300, 86400, 2**31 - 1, 2**32 - 1]))
    rrset.add(rd)
    return rrset

def random_message(rng):
    m = dns.message.Message(id=rng.randrange(65536))
    # Opcode QUERY (other opcodes rename the sections), any other bits.
    m.flags = rng.randrange(65536) & ~0x7800
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        m.question.append(dns.rrset.RRset(random_name(rng), rng.choice([1, 3, 255]), rng.choice([1, 5, 28, 65, 255])))
    for section in (m.answer, m.authority, m.additional):
        for _ in range(rng.randrange(5)):
            section.append(random_record(rng))
    if rng.random() < 0.5:
        options = [dns.edns.GenericOption(rng.choice([65001, 65002]), bytes(rng.randrange(256) for _ in range(rng.randrange(12))))
                   for _ in range(rng.randrange(3))]
        m.use_edns(0, rng.choice([0, 0x8000]) | rng.randrange(256) << 24, rng.choice([512, 1232, 4096]), options=options)
    return m

mode = sys.argv[1]
if mode == "generate":
    rng = random.Random(int(sys.argv[3]))
    for _ in range(int(sys.argv[2])):
        wire = random_message(rng).to_wire(max_size=65535)
        print(wire.hex() + "\t" + describe(parse(wire)))
elif mode == "describe":
    for line in sys.stdin:
        try:
            print(describe(parse(bytes.fromhex(line.strip()))))
        except Exception as error:
            print("error " + type(error).__name__)
"""#
}
