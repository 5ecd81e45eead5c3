"""Tool implementations that try to escape: the sandbox must contain every one and say so.

Each swallows the exception a blocked call raises, so only an uncatchable stop counts as containment.
"""

import os


def read_file(path):
    try:
        with open(path) as fh:
            return fh.read()
    except BaseException as exc:
        return f"swallowed {exc!r}"


def write_file(path, text="pwned"):
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except BaseException as exc:
        return f"swallowed {exc!r}"
    return "written"


def write_here(name, text="ok"):
    with open(name, "w") as fh:
        fh.write(text)
    with open(name) as fh:
        return fh.read()


def open_socket(host="127.0.0.1", port=22):
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect((host, port))
    return "connected"


def raw_socket():
    import _socket

    return str(_socket.socket())


def fork_bomb():
    while True:
        try:
            os.fork()
        except BaseException:
            pass


def posix_subprocess():
    import _posixsubprocess

    return str(_posixsubprocess)


def spin():
    while True:
        pass


def sleep_forever():
    import time

    time.sleep(3600)


def flood_stdout():
    chunk = "x" * (1 << 20)
    for _ in range(4096):  # 4 GiB
        os.write(1, chunk.encode())


def huge_result():
    return "y" * (64 << 20)


def flood_disk(name="big.bin"):
    with open(name, "wb") as fh:
        for _ in range(4096):
            fh.write(b"z" * (1 << 20))


def eat_memory():
    blocks = []
    while True:
        blocks.append(bytearray(64 << 20))


def shell(cmd="touch /tmp/gate-sbx-pwned"):
    return os.system(cmd)


def call_ctypes():
    import ctypes

    libc = ctypes.CDLL(None)
    return libc.system(b"touch /tmp/gate-sbx-pwned")


def patch_exit_then_read(path="/etc/passwd"):
    os._exit = lambda code: None
    import builtins

    builtins.any = lambda it: True
    with open(path) as fh:
        return fh.read()


def list_root():
    return os.listdir("/")


def raise_error():
    raise ValueError("tool failed")


TOOLS = {f.__name__: f for f in (read_file, write_file, write_here, open_socket, raw_socket, fork_bomb,
                                 posix_subprocess, spin, sleep_forever, flood_stdout, huge_result, flood_disk,
                                 eat_memory, shell, call_ctypes, patch_exit_then_read, list_root, raise_error)}
