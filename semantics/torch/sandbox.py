"""The kernel-enforced sandbox the capture worker enters before it imports torch or runs a reference.

Three layers, all unprivileged (they work as root and as any other user) and inherited by every process
the reference could start:

* namespaces: a new user namespace (so that an ordinary user may create the others), a new network
  namespace (only a loopback device that is down: no connection reaches this host or any other) and a new
  PID namespace whose first process is the worker, so that when the worker ends the kernel kills whatever a
  reference forked, even a child that left the process group with setsid();
* Landlock: no file may be created, written, truncated, renamed or removed anywhere but beneath the
  capture's temporary directory (and /dev/null); reading stays free, since torch must import. TCP bind and
  connect are refused as well (ABI 4), signals to processes outside the sandbox and abstract Unix sockets
  too (ABI 6);
* an audit hook (`refuse_outside`) that turns each such attempt made through Python into the end of the
  capture, naming what was refused; the kernel layers stop what bypasses Python (ctypes, a C extension).

A mechanism the kernel lacks is skipped with a warning (`enter` returns them): the sandbox protects the
host, the verdict does not depend on it, and the rlimits and wall-clock limit of `capture.py` still hold.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["enter", "refuse_outside"]

_CLONE_NEWUSER, _CLONE_NEWNET, _CLONE_NEWPID = 0x10000000, 0x40000000, 0x20000000
_PR_SET_NO_NEW_PRIVS = 38
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446   # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Landlock filesystem rights that change the file system, by the ABI version that introduced them.
_FS_WRITE_RIGHTS = {
    1: (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11)
       | (1 << 12),      # write file, remove dir/file, make char/dir/reg/sock/fifo/block/symlink
    2: 1 << 13,          # refer (link or rename across directories)
    3: 1 << 14,          # truncate
}
_FS_WRITE_FILE, _FS_TRUNCATE = 1 << 1, 1 << 14
_NET_TCP = (1 << 0) | (1 << 1)          # bind, connect (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)           # abstract Unix sockets, signals (ABI 6)

_libc = ctypes.CDLL(None, use_errno=True)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def enter(writable: Path) -> list[str]:
    """Confine this process and all it will start; returns a warning per mechanism the kernel refused.
    Call it while the process has one thread (before importing torch): unshare(CLONE_NEWUSER) and Landlock
    both act on the calling thread only. This process returns as the first process of the new PID
    namespace; the original one waits for it and exits with its status."""
    warnings = []
    try:
        _new_namespaces()
    except OSError as exc:
        warnings.append(f"no network or PID namespace ({exc}): the reference keeps the host's network")
    try:
        warnings += _landlock(writable)
    except OSError as exc:
        warnings.append(f"no Landlock ({exc}): the reference may write outside {writable}")
    return warnings


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _new_namespaces() -> None:
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET | _CLONE_NEWPID), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")   # the same ids inside: files stay the user's
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    pid = os.fork()      # the child is PID 1 of the new namespace; its end kills all it started
    if pid == 0:
        return
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) % 256)


def _landlock(writable: Path) -> list[str]:
    abi = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    _check(abi, "landlock_create_ruleset")
    fs = sum(bits for version, bits in _FS_WRITE_RIGHTS.items() if abi >= version)
    fields = [fs, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0]
    size = 8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    attr = (ctypes.c_uint64 * 3)(*fields)
    ruleset = _check(_libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        _allow(ruleset, writable, fs)
        _allow(ruleset, Path(os.devnull), fs & (_FS_WRITE_FILE | _FS_TRUNCATE))
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return [] if abi >= 4 else [f"Landlock ABI {abi} cannot refuse TCP (the network namespace still does)"]


def _allow(ruleset: int, path: Path, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneath(rights, fd)
        _check(_libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)),
               f"landlock_add_rule({path})")
    finally:
        os.close(fd)


# Audit events (https://docs.python.org/3/library/audit_events.html) the reference may not raise, with what
# the user is told it tried; `_WRITES` gives the argument positions that are paths written to.
_NETWORK = {"socket.connect": "open a network connection", "socket.bind": "bind a network socket",
            "socket.sendto": "send a network packet", "socket.sendmsg": "send a network packet"}
_PROCESSES = {"os.fork": "fork a process", "os.forkpty": "fork a process", "os.system": "run a shell command",
              "os.exec": "run a program", "os.posix_spawn": "run a program", "os.spawn": "run a program",
              "subprocess.Popen": "run a program", "os.kill": "send a signal", "os.killpg": "send a signal"}
_WRITES = {"os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.symlink": (1,),
           "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def refuse_outside(writable: Path, refused: Callable[[str], NoReturn]) -> None:
    """From now on, a network call, a new process or a write outside `writable` made through Python calls
    `refused` with what was tried ("the reference tried to ..."), which must end the process: an exception
    could be caught by the reference. Audit hooks cannot be removed, so this lasts for the process."""
    root = os.path.realpath(writable)

    def outside(path: Any) -> str | None:
        if not isinstance(path, str | bytes | os.PathLike):
            return None      # a file descriptor: what it names was checked when it was opened
        real = os.path.realpath(os.fsdecode(path))
        return None if real == os.devnull or os.path.commonpath([real, root]) == root else real

    def hook(event: str, args: tuple) -> None:
        if event in _NETWORK:
            target = f" to {args[1]!r}" if len(args) > 1 else ""
            refused(f"the reference tried to {_NETWORK[event]}{target}")
        elif event in _PROCESSES:
            refused(f"the reference tried to {_PROCESSES[event]} ({event})")
        elif event == "open" and isinstance(args[2], int) and args[2] & _WRITE_FLAGS:
            if (path := outside(args[0])) is not None:
                refused(f"the reference tried to write {path}")
        elif event in _WRITES:
            for path in filter(None, (outside(args[i]) for i in _WRITES[event] if i < len(args))):
                refused(f"the reference tried to write {path} ({event})")

    sys.addaudithook(hook)
