"""The sandboxed side of tool execution. Run as `python -I -S _sandbox_child.py` by gate.score.sandbox, never
imported by gate itself (it must start with nothing but the standard library loaded).

Order matters: read the job, leave the network namespace, set resource limits, drop root, install the audit
hook, and only then load the tool module and run calls. The audit hook cannot be removed once installed; on the
first forbidden event it writes one line to stderr and ends the process with os._exit (which no tool code can
catch), so a tool that swallows exceptions still gets reported.
"""

import json
import os
import resource
import sys

VIOLATION = 86
MEMORY = 87


def _die(code: int, message: str) -> None:
    try:
        os.write(2, ("SANDBOX: " + message.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
    finally:
        os._exit(code)


def _leave_network() -> str:
    """A fresh network namespace has only a down loopback: no route anywhere. Needs root (or CAP_SYS_ADMIN)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x40000000) == 0:  # CLONE_NEWNET
            return "netns"
    except Exception:
        pass
    return "audit"


def _limits(job: dict) -> None:
    lim = job["limits"]
    cpu = int(lim["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = int(lim["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    out = int(lim["output_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (out, out))
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = int(lim.get("nproc", 0))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _drop_root(job: dict) -> None:
    if os.geteuid() == 0 and job.get("uid") is not None:
        os.setgroups([])
        os.setgid(int(job["gid"]))
        os.setuid(int(job["uid"]))


_BLOCK_PREFIX = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                 "os.system", "os.kill", "os.killpg", "pty.", "urllib.", "http.", "ftplib.", "smtplib.",
                 "resource.", "os.chroot", "os.setuid", "webbrowser.", "imaplib.", "poplib.", "telnetlib.",
                 "os.symlink", "os.link", "sys.remote_exec")
_BLOCK_IMPORT = frozenset({"_posixsubprocess", "_socket", "socket", "ctypes", "_ctypes", "subprocess",
                           "multiprocessing",
                           "_multiprocessing", "pty", "mmap", "resource", "_ssl", "ssl", "select", "selectors",
                           "asyncio", "signal", "faulthandler", "_xxsubinterpreters", "_thread", "threading"})
_LIST_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob"})
_PATH_EVENTS = frozenset({"os.chdir", "os.mkdir", "os.remove", "os.rename",
                          "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree",
                          "shutil.copyfile", "shutil.copytree", "shutil.move", "os.chflags", "os.lchmod",
                          "os.setxattr", "os.removexattr", "os.listxattr", "os.getxattr"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _install_hook(home: str, read_roots: tuple) -> None:
    # Everything the hook uses is bound here, so tool code that patches os, builtins or this module cannot
    # turn the hook off (os._exit patched to a no-op would otherwise let a blocked event through).
    _exit, _write, _isinstance, _any, _str, _bytes, _int, _tuple = (os._exit, os.write, isinstance, any, str,
                                                                    bytes, int, tuple)
    realpath = os.path.realpath
    join = os.path.join
    sep = os.sep
    startswith = str.startswith
    busy = [False]

    fspath = os.fspath

    def die(message: str) -> None:
        try:
            _write(2, ("SANDBOX: " + message.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
        finally:
            _exit(VIOLATION)

    def inside(path: object, roots: tuple) -> bool:
        if _isinstance(path, _int):
            return path in (0, 1, 2)
        if _isinstance(path, _bytes):
            path = path.decode("utf-8", "replace")
        if not _isinstance(path, _str):
            path = fspath(path)
        full = realpath(join(home, path))
        return _any(full == r or startswith(full, r + sep) for r in roots)

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            if event.startswith(_BLOCK_PREFIX):
                die(f"blocked {event}")
            if event == "import" and args and str(args[0]).split(".")[0] in _BLOCK_IMPORT:
                die(f"blocked import of {args[0]}")
            if event == "open":
                path, mode, flags = (_tuple(args) + (None, None, None))[:3]
                writing = ((_isinstance(mode, _str) and _any(c in mode for c in "wax+"))
                           or bool((flags or 0) & _WRITE_FLAGS))
                if path is not None and not inside(path, (home,) if writing else (home, *read_roots)):
                    die(f"blocked {'write' if writing else 'read'} outside the sandbox: {path!r}")
            elif event in _LIST_EVENTS:
                if args and _isinstance(args[0], (_str, _bytes)) and not inside(args[0], (home, *read_roots)):
                    die(f"blocked {event} outside the sandbox: {args[0]!r}")
            elif event in _PATH_EVENTS:
                for a in args[:2]:
                    if _isinstance(a, (_str, _bytes)) and not inside(a, (home,)):
                        die(f"blocked {event} outside the sandbox: {a!r}")
        finally:
            busy[0] = False

    sys.addaudithook(hook)


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin = None
    home = os.path.realpath(os.getcwd())
    network = _leave_network() if job.get("netns", True) else "audit"
    _limits(job)
    out = os.dup(1)
    os.dup2(2, 1)  # whatever a tool prints goes to the (capped) stderr file, not into the result channel
    module_path = os.path.realpath(job["module"])
    stdlib = os.path.dirname(os.path.realpath(os.__file__))
    # Loaded while still privileged: after the drop to an unprivileged uid the interpreter's own library may be
    # unreadable (e.g. a pyenv under /root), so the tool source and the modules tools commonly use come first.
    with open(module_path, encoding="utf-8") as fh:
        source = fh.read()
    for name in job.get("preload", ()):
        try:
            __import__(name)
        except ImportError:
            pass
    import signal
    import types

    # Python ignores SIGXFSZ, turning the file-size limit into a catchable OSError; the default action ends the
    # process, which the parent reports as an output-limit violation.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    _drop_root(job)
    _install_hook(home, (stdlib,))
    try:
        mod = types.ModuleType("gate_sandbox_tools")
        mod.__file__ = module_path
        sys.modules["gate_sandbox_tools"] = mod
        exec(compile(source, module_path, "exec"), mod.__dict__)
        table = getattr(mod, "TOOLS", None)
        if not isinstance(table, dict):
            raise TypeError("the tool module has no TOOLS table")
        state = job.get("state")
        if state is None and callable(getattr(mod, "initial_state", None)):
            state = mod.initial_state()
        results = []
        for name, args in job["calls"]:
            fn = table.get(name)
            if fn is None:
                results.append({"error": "UnknownTool", "message": name})
                continue
            try:
                results.append({"result": fn(state, **args) if state is not None else fn(**args)})
            except MemoryError:
                _die(MEMORY, f"memory limit reached in {name}")
            except Exception as exc:
                results.append({"error": type(exc).__name__, "message": str(exc)[:300]})
        payload = json.dumps({"results": results, "state": state, "network": network}, default=repr,
                             sort_keys=True)
    except MemoryError:
        _die(MEMORY, "memory limit reached")
    except Exception as exc:
        payload = json.dumps({"fatal": f"{type(exc).__name__}: {str(exc)[:300]}", "network": network})
    data = memoryview(payload.encode("utf-8"))
    while data:
        data = data[os.write(out, data):]
    os._exit(0)


if __name__ == "__main__":
    main()
