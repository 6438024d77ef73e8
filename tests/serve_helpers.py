"""Helpers of the `prefetchsim serve` tests: the server as a subprocess, the real clients, and a minimal
NBD client written from the protocol document (for requests the tests must control exactly)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REQUIRED = os.environ.get("PREFETCHSIM_REQUIRE_TRACES") == "1"

# The Debian package that provides each client (scripts/test.sh installs them when it can).
PACKAGES = {"qemu-io": "qemu-utils", "qemu-img": "qemu-utils", "qemu-nbd": "qemu-utils", "nbdinfo": "libnbd-bin",
            "nbdcopy": "libnbd-bin", "fio": "fio", "nbdkit": "nbdkit"}


def need(tool: str) -> str:
    """The path of a client program; skip with the reason when it is missing (fail under CI's
    PREFETCHSIM_REQUIRE_TRACES=1)."""
    path = shutil.which(tool)
    if path is None:
        msg = f"{tool} not installed (Debian package {PACKAGES.get(tool, tool)}; scripts/test.sh installs it as root)"
        if REQUIRED:
            pytest.fail(msg + " and PREFETCHSIM_REQUIRE_TRACES=1")
        pytest.skip(msg)
    return path


def need_fio_nbd() -> str:
    fio = need("fio")
    engines = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, check=False).stdout
    if "nbd" not in engines.split():
        msg = "this fio has no nbd ioengine (fio --enghelp)"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)
    return fio


def write_config(path: Path, levels: list[dict[str, Any]]) -> Path:
    """A run config (TOML) with the given levels."""

    def value(v: Any) -> str:
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    text = "".join("[[level]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in lv.items()) + "\n" for lv in levels)
    path.write_text(text)
    return path


class Server:
    """`python -m prefetchsim serve` as a subprocess on a Unix socket (or loopback TCP)."""

    def __init__(self, config: Path, backing: Path, workdir: Path, *, emulate: str | None = None,
                 record: bool = True, tcp: bool = False, block_size: int = 4096):
        self.socket = workdir / "nbd.sock"
        self.record = workdir / "served.csv" if record else None
        self.report = workdir / "report.json"
        cmd = [sys.executable, "-m", "prefetchsim", "serve", str(config), "--backing", str(backing),
               "--report", str(self.report), "--block-size", str(block_size)]
        cmd += ["--listen", "127.0.0.1:0"] if tcp else ["--socket", str(self.socket)]
        if self.record is not None:
            cmd += ["--record", str(self.record)]
        if emulate:
            cmd += ["--emulate", emulate]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.address = self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.2)
            if r:
                line = self.proc.stderr.readline()
                if line.startswith("prefetchsim serve: listening on "):
                    return line.split(" on ", 1)[1].strip()
                if line == "" and self.proc.poll() is not None:
                    break
            elif self.proc.poll() is not None:
                break
        self.proc.kill()
        raise AssertionError(f"server did not start: {self.proc.stderr.read()}")

    @property
    def uri(self) -> str:
        if self.address.startswith("/"):
            return f"nbd+unix:///?socket={self.address}"
        return f"nbd://{self.address}/"

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60.0) -> dict[str, Any]:
        """Stop with `sig` and return the report it wrote."""
        import json

        self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        assert self.proc.returncode == 0, err
        return json.loads(self.report.read_text())

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            self.proc.stderr.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._close_pipe()


# --- a minimal NBD client -------------------------------------------------------------------------------

NBD_MAGIC, IHAVEOPT, REPLY_MAGIC = 0x4E42444D41474943, 0x49484156454F5054, 0x3E889045565A9
REQUEST_MAGIC, SIMPLE_REPLY = 0x25609513, 0x67446698
OPT_GO, REP_ACK, REP_INFO = 7, 1, 3
CMD_READ, CMD_WRITE, CMD_FLUSH, CMD_DISC = 0, 1, 3, 2


class NbdClient:
    """Fixed newstyle, NBD_OPT_GO, simple replies; requests may be pipelined (`send`/`receive`)."""

    def __init__(self, address: str):
        if address.startswith("/"):
            self.s = socket.socket(socket.AF_UNIX)
            self.s.connect(address)
        else:
            host, port = address.rsplit(":", 1)
            self.s = socket.create_connection((host, int(port)))
        self.s.settimeout(30)
        magic, opt, _flags = struct.unpack(">QQH", self._recv(18))
        assert (magic, opt) == (NBD_MAGIC, IHAVEOPT)
        self.s.sendall(struct.pack(">I", 3))
        data = struct.pack(">IH", 0, 0)
        self.s.sendall(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
        self.size = None
        while True:
            magic, _opt, kind, length = struct.unpack(">QIII", self._recv(20))
            assert magic == REPLY_MAGIC
            payload = self._recv(length)
            if kind == REP_INFO and struct.unpack(">H", payload[:2])[0] == 0:
                self.size = struct.unpack(">Q", payload[2:10])[0]
            if kind == REP_ACK:
                break
            assert kind == REP_INFO, hex(kind)
        self.pending: dict[int, tuple[int, int]] = {}
        self.next = 1

    def _recv(self, n: int) -> bytes:
        b = b""
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            if not chunk:
                raise ConnectionError("server closed the connection")
            b += chunk
        return b

    def send(self, cmd: int, offset: int = 0, length: int = 0, data: bytes = b"") -> int:
        h = self.next
        self.next += 1
        self.pending[h] = (cmd, length)
        self.s.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, cmd, h, offset, length) + data)
        return h

    def receive(self) -> tuple[int, int, bytes]:
        """One reply: (handle, error, data)."""
        magic, err, h = struct.unpack(">IIQ", self._recv(16))
        assert magic == SIMPLE_REPLY
        cmd, length = self.pending.pop(h)
        data = self._recv(length) if cmd == CMD_READ and err == 0 else b""
        return h, err, data

    def read(self, offset: int, length: int) -> bytes:
        self.send(CMD_READ, offset, length)
        _, err, data = self.receive()
        assert err == 0, err
        return data

    def write(self, offset: int, data: bytes) -> None:
        self.send(CMD_WRITE, offset, len(data), data)
        assert self.receive()[1] == 0

    def flush(self) -> None:
        self.send(CMD_FLUSH)
        assert self.receive()[1] == 0

    def close(self) -> None:
        try:
            self.send(CMD_DISC)
        except OSError:
            pass
        self.s.close()
