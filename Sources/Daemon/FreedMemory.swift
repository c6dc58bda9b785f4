import CLinux

/// glibc's malloc keeps the pages of freed memory resident, in the middle of its heap, until
/// asked to give them back. vpnd frees megabytes at two moments: after a policy is read and
/// applied (a policy of 100,000 domains is tens of megabytes of parse tree and plan), and
/// after a large control reply (a status lists every domain). Both are rare, so the walk
/// over malloc's free lists costs nothing that matters.
enum FreedMemory {
    static func giveBack() {
        _ = malloc_trim(0)
    }
}
