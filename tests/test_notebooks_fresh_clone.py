"""Every notebook executes from a fresh clone, offline, writing nothing outside a temp dir.

A CI step (``.ci/run``), left out of the default run: ``pytest -m fresh_clone``. It tests the
committed ``HEAD`` (a clone has no uncommitted work), and takes about one nbval pass.

How:
- ``git clone`` the repository into a temporary directory (the *sandbox*) and run nbval on
  every notebook of the clone's ``book/``, importing the clone's own ``mini_transformer``
  (``PYTHONPATH``), with ``HOME``, ``TMPDIR``, the XDG, Jupyter, IPython and Matplotlib
  directories all inside the sandbox;
- network: the run goes into a new network namespace holding only a loopback interface
  (``unshare --net``, as root or in a user namespace) where the machine allows it; and in
  every case the kernel's Python audit hook (an IPython startup file in the sandbox's
  profile) refuses DNS look-ups and connections to anything but loopback;
- writes: the same audit hook refuses (and logs) any file opened for writing, created,
  renamed or removed outside the sandbox; afterwards ``git status --porcelain --ignored``
  of the clone must be empty (no file added, changed or removed, not even an ignored one);
- a control notebook proves the guard bites: its forbidden write and connections fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.fresh_clone

ROOT = Path(__file__).resolve().parents[1]

# Runs in every kernel before the first cell (IPython profile startup file).
GUARD = r'''
import ipaddress as _ip, os as _os, sys as _sys

_ALLOWED = [_os.path.realpath(p) for p in _os.environ["NB_SANDBOX"].split(_os.pathsep)] + ["/dev"]
_LOG = open(_os.environ["NB_SANDBOX_LOG"], "a", buffering=1)
_WRITE = _os.O_WRONLY | _os.O_RDWR | _os.O_CREAT | _os.O_APPEND | _os.O_TRUNC
_PATH_EVENTS = {  # audit event -> positions of the paths it changes
    "os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1),
    "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,),
    "os.chown": (0,), "os.utime": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,),
    "shutil.rmtree": (0,), "shutil.move": (0, 1), "shutil.make_archive": (0,),
}
_LOCAL_HOSTS = {None, "", "localhost", "localhost.localdomain", "ip6-localhost"}

def _inside(path):
    if isinstance(path, int):  # an open file descriptor
        return True
    try:
        real = _os.path.realpath(_os.fsdecode(path))
    except Exception:
        return False
    return any(real == a or real.startswith(a + _os.sep) for a in _ALLOWED)

def _loopback(host):
    if isinstance(host, bytes):
        host = host.decode()
    if host in _LOCAL_HOSTS:
        return True
    try:
        return _ip.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False

def _deny(what):
    _LOG.write(what + "\n")
    raise PermissionError(f"notebook sandbox: {what}")

def _guard(event, args):
    if event == "open":
        path, mode, flags = args
        writing = bool((flags or 0) & _WRITE) or (isinstance(mode, str) and any(c in mode for c in "wax+"))
        if writing and path is not None and not _inside(path):
            _deny(f"write outside the temp dir: {path!r} (mode {mode!r})")
    elif event in _PATH_EVENTS:
        for i in _PATH_EVENTS[event]:
            if i < len(args) and args[i] is not None and not _inside(args[i]):
                _deny(f"{event} outside the temp dir: {args[i]!r}")
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
        if not _loopback(args[0]):
            _deny(f"network: {event}({args[0]!r})")
    elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        address = args[1] if len(args) > 1 else None
        if isinstance(address, tuple) and not _loopback(address[0]):
            _deny(f"network: {event} to {address!r}")
    elif event == "urllib.Request":
        if not str(args[0]).startswith("file:"):
            _deny(f"network: urllib request to {args[0]!r}")

_sys.addaudithook(_guard)
'''

# A notebook that must be stopped at every step; each cell prints "blocked" when it is.
CONTROL_CELLS = {
    "write into the clone": "open(os.path.join(os.environ['NB_CLONE'], 'README.md'), 'a')",
    "write to an absolute path": "open('/var/tmp/nb-sandbox-control.txt', 'w')",
    "make a directory in the clone": "os.mkdir(os.path.join(os.environ['NB_CLONE'], 'junk'))",
    "resolve a host name": "socket.getaddrinfo('pypi.org', 443)",
    "connect to an address": "socket.create_connection(('192.0.2.1', 80), timeout=2)",
    "fetch a URL": "urllib.request.urlopen('http://192.0.2.1/', timeout=2)",
}


def _control_notebook() -> dict:
    def code(src: str, text: str) -> dict:
        return {
            "cell_type": "code", "id": f"control-{len(cells)}", "execution_count": None, "metadata": {}, "source": src,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": text}],
        }

    cells: list[dict] = []
    cells.append(code("import os, socket, urllib.request\nprint('ok')", "ok\n"))
    for what, statement in CONTROL_CELLS.items():
        src = f"try:\n    {statement}\n    print('ALLOWED')\nexcept Exception:\n    print('blocked')"
        cells.append(code(src, "blocked\n"))
    for n, cell in enumerate(cells, 1):
        cell["execution_count"] = n
    return {
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    }


def _network_namespace_prefix() -> list[str]:
    """``unshare`` arguments that give a network namespace with only loopback, or [] if none."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    for prefix in (["unshare", "--net"], ["unshare", "--map-root-user", "--net"]):
        probe = subprocess.run(prefix + ["ip", "link", "set", "lo", "up"], capture_output=True)
        if probe.returncode == 0:
            return prefix + ["sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    return []


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    box = tmp_path_factory.mktemp("nb-sandbox")
    clone = box / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    # The only places a notebook may write: all inside the sandbox, none inside the clone.
    dirs = {name: box / name for name in ("home", "tmp", "ipython", "jupyter", "run", "mpl")}
    for d in dirs.values():
        d.mkdir()
    startup = dirs["ipython"] / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-sandbox-guard.py").write_text(GUARD)
    log = box / "violations.log"
    log.touch()

    keep = ("PATH", "LANG", "LC_ALL", "TERM", "CI", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS", "HYPOTHESIS_PROFILE", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        NB_SANDBOX=os.pathsep.join(map(str, dirs.values())), NB_SANDBOX_LOG=str(log), NB_CLONE=str(clone),
        PYTHONPATH=str(clone), PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1",
        HOME=str(dirs["home"]), TMPDIR=str(dirs["tmp"]), TMP=str(dirs["tmp"]), TEMP=str(dirs["tmp"]),
        XDG_CACHE_HOME=str(dirs["home"] / ".cache"), XDG_CONFIG_HOME=str(dirs["home"] / ".config"),
        XDG_DATA_HOME=str(dirs["home"] / ".local/share"), XDG_RUNTIME_DIR=str(dirs["run"]),
        IPYTHONDIR=str(dirs["ipython"]), MPLCONFIGDIR=str(dirs["mpl"]),
        JUPYTER_CONFIG_DIR=str(dirs["jupyter"] / "config"), JUPYTER_DATA_DIR=str(dirs["jupyter"] / "data"),
        JUPYTER_RUNTIME_DIR=str(dirs["jupyter"] / "runtime"), JUPYTER_PLATFORM_DIRS="1",
        TORCH_HOME=str(dirs["home"] / ".torch"), HF_HUB_OFFLINE="1",
        NO_PROXY="*", no_proxy="*",
    )
    # Matplotlib's font cache for a fresh MPLCONFIGDIR: build it once here, not in every kernel.
    mpl_cache = subprocess.run(
        [sys.executable, "-c", "import matplotlib.font_manager"], env=env, cwd=box, capture_output=True, text=True
    )
    assert mpl_cache.returncode == 0, mpl_cache.stderr
    return {"box": box, "clone": clone, "env": env, "log": log, "netns": _network_namespace_prefix()}


def _nbval(sandbox, *paths: str, workers: int = 2) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "-q", "--no-header", "-o", "addopts=", *paths]
    if workers > 1:
        cmd[3:3] = ["-n", str(workers), "--dist", "loadfile"]
    return subprocess.run(sandbox["netns"] + cmd, cwd=sandbox["clone"], env=sandbox["env"],
                          capture_output=True, text=True, timeout=900)


def _report(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def test_clone_imports_its_own_package(sandbox):
    proc = subprocess.run(
        sandbox["netns"] + [sys.executable, "-c", "import mini_transformer; print(mini_transformer.__file__)"],
        cwd=sandbox["clone"] / "book", env=sandbox["env"], capture_output=True, text=True,
    )
    assert proc.returncode == 0, _report(proc)
    assert Path(proc.stdout.strip()).resolve().is_relative_to(sandbox["clone"].resolve()), proc.stdout


def test_guard_blocks_writes_and_network(sandbox):
    """The control notebook: each forbidden action fails in the kernel and is logged."""
    control = sandbox["box"] / "control"
    control.mkdir()
    (control / "control.ipynb").write_text(json.dumps(_control_notebook()))
    proc = _nbval(sandbox, str(control / "control.ipynb"), workers=1)
    logged = sandbox["log"].read_text()
    sandbox["log"].write_text("")  # the real run below starts with an empty log
    assert proc.returncode == 0, "a forbidden action was not blocked:\n" + _report(proc)
    assert "write outside the temp dir" in logged and "network:" in logged, logged
    assert not Path("/var/tmp/nb-sandbox-control.txt").exists()
    if not sandbox["netns"]:
        warnings.warn("no network namespace here (unshare refused): the network is blocked only "
                      "by the kernel's audit hook, not by the OS")


def test_every_notebook_runs_from_a_fresh_clone(sandbox):
    clone = sandbox["clone"]
    notebooks = sorted(p.relative_to(clone).as_posix() for p in (clone / "book").glob("*.ipynb"))
    assert notebooks, "the clone has no notebook in book/"
    proc = _nbval(sandbox, *notebooks)
    print(f"network namespace: {'yes' if sandbox['netns'] else 'no (audit hook only)'}")
    print(proc.stdout[-2000:])
    assert proc.returncode == 0, "nbval failed in the fresh clone:\n" + _report(proc)
    violations = sandbox["log"].read_text()
    assert not violations, f"notebooks wrote outside the temp dir or reached for the network:\n{violations}"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout
    assert not status, f"executing the notebooks changed the clone:\n{status}"
