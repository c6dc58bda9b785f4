#!/usr/bin/env python3
"""Drives the pid-reuse race against vpnd on purpose (run as root).

usage: pidreuse.py SOCKET PROFILE ATTACKER_UID VICTIM_UID none|victim-pidfd
An attacker process P (ATTACKER_UID) connects to vpnd's socket, forks a child C that keeps
the connection, and exits. Its pid is then handed to a new victim process V (VICTIM_UID)
through /proc/sys/kernel/ns_last_pid. C then asks vpnd to put "the caller" into PROFILE,
sending no pidfd or a pidfd of V. A vpnd that trusted SO_PEERCRED's pid would move V.
Prints "response: <vpnd's answer>" and "victim: <V's cgroup v2 path>"."""
import array, json, os, signal, socket, sys, time

path, profile, attacker, victim, passing = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
go_r, go_w = os.pipe()
out_r, out_w = os.pipe()

pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setgid(attacker); os.setuid(attacker)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if os.fork() == 0:
        os.read(go_r, 1)  # C: wait until the pid belongs to the victim
        request = (json.dumps({"exec": {"profile": profile}}) + "\n").encode()
        fds = []
        if passing == "victim-pidfd":
            fds = [os.pidfd_open(int(os.read(go_r, 16).decode()))]
        s.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        os.write(out_w, answer or b"(no answer)\n")
        os._exit(0)
    os._exit(0)  # P exits; C holds the connection
os.waitpid(pid, 0)  # P is reaped: its pid is free

victim_pid = None
for attempt in range(200):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    v = os.fork()
    if v == 0:
        if os.getpid() == pid:
            os.setgroups([]); os.setgid(victim); os.setuid(victim)
            os.execvp("sleep", ["sleep", "60"])
        os._exit(0)
    if v == pid:
        victim_pid = v
        break
    os.waitpid(v, 0)
if victim_pid is None:
    sys.exit("could not hand pid %d to a victim (other processes kept taking it)" % pid)
time.sleep(0.2)  # the victim has exec'd
os.write(go_w, b"g")
if passing == "victim-pidfd":
    os.write(go_w, str(victim_pid).encode())
answer = os.read(out_r, 65536).decode().strip()
with open("/proc/%d/cgroup" % victim_pid) as f:
    cgroup = [l[3:].strip() for l in f if l.startswith("0::")][0]
os.kill(victim_pid, signal.SIGKILL)
os.waitpid(victim_pid, 0)
print("pid:", pid)
print("response:", answer)
print("victim:", cgroup, flush=True)
