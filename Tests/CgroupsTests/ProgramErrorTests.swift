import BPF
import Cgroups
import Descriptors
import Glibc
import Testing

/// Why a socket program could not be made or used, in the words vpnd logs and status
/// shows (a member's unguarded cgroup, names not followed), from the values kept.
@Suite struct ProgramErrorTests {
    @Test func aProgramThatCannotBeMadeSaysWhy() {
        let cases: [(ProgramError, String)] = [
            (.labelDefinedTwice("done"), "label done defined twice"),
            (.undefinedLabel("done"), "jump to undefined label done"),
            (.jumpTooFar(to: "done"), "jump to done is too far"),
            (.notBTF, "not BTF (no magic)"),
            (.btfSectionsOutOfBounds, "BTF sections out of bounds"),
            (.btfTypeCutShort(id: 7), "BTF type 7 cut short"),
            (.btfUnknownKind(id: 7, kind: 31), "BTF type 7 of unknown kind 31"),
            (.kernelLacks("bpf_sock_addr_set_sun_path"), "the kernel has no bpf_sock_addr_set_sun_path"),
            (ProgramError.typesNotGiven(program: "unix-connect"), "the unix-connect program needs the kernel's types"),
        ]
        for (error, words) in cases { #expect(error.description == words) }
    }

    /// The assembler's refusals are cases, not words.
    @Test func theAssemblerRefusesByCase() {
        var twice = BPFAssembler()
        twice.label("a")
        twice.label("a")
        #expect(throws: ProgramError.labelDefinedTwice("a")) { try twice.assemble() }
        var nowhere = BPFAssembler()
        nowhere.jump(to: "b")
        #expect(throws: ProgramError.undefinedLabel("b")) { try nowhere.assemble() }
    }

    @Test func aProgramTheKernelRefusesOrLacksSaysWhyAndKeepsItsErrno() {
        let cases: [(SocketProgramError, String, Int32)] = [
            (.system(SystemError("bpf: attaching vx_mark to vpn.slice/vpn-work.slice", code: EPERM)),
             "bpf: attaching vx_mark to vpn.slice/vpn-work.slice: Operation not permitted", EPERM),
            (.loadRefused(SystemError("bpf: loading the socket program vx_mark", code: EACCES), verifier: "R1 invalid mem access; processed 12 insns"),
             "bpf: loading the socket program vx_mark: Permission denied (R1 invalid mem access; processed 12 insns)", EACCES),
            (.loadRefused(SystemError("bpf: loading the socket program vx_mark", code: EPERM), verifier: ""),
             "bpf: loading the socket program vx_mark: Operation not permitted", EPERM),
            (.assembling(program: "vx_mark", .undefinedLabel("done")), "assembling vx_mark: Invalid argument (jump to undefined label done)", EINVAL),
            (.kernelTypes(.kernelLacks("bpf_sock_addr_set_sun_path")),
             "reading the kernel's types (/sys/kernel/btf/vmlinux): No such file or directory (the kernel has no bpf_sock_addr_set_sun_path)", ENOENT),
            (.notLoaded(program: "vx_unix", path: "vpn.slice/vpn-work.slice", because: .kernelTypes(.kernelLacks("bpf_sock_addr_set_sun_path"))),
             "attaching vx_unix to vpn.slice/vpn-work.slice: Operation not supported (reading the kernel's types (/sys/kernel/btf/vmlinux): "
                + "No such file or directory (the kernel has no bpf_sock_addr_set_sun_path))", EOPNOTSUPP),
            (.notLoaded(program: "vx_unix", path: "vpn.slice", because: nil), "attaching vx_unix to vpn.slice: Operation not supported (not loaded)", EOPNOTSUPP),
            (.cgroupReplaced(path: "vpn.slice/vpn-work.slice", id: 812), "attach to vpn.slice/vpn-work.slice: Stale file handle (its id is not 812 any more)", ESTALE),
            (.keyOutsideSteering(key: 0, keys: 1...65534), "bpf: setting a DNS proxy socket at key 0, outside 1...65534: Invalid argument", EINVAL),
        ]
        for (error, words, code) in cases {
            #expect(error.description == words)
            #expect(error.code == code, "\(error)")
        }
    }
}
