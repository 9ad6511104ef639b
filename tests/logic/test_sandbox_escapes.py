"""Escape attempts against the sandbox, as an attacker would write them.

Each escape runs twice through each door: as ``run_sandboxed`` code and as a family file that
``veritask logic generate`` loads; once as written (the audit hook may be the first to refuse)
and once after switching the audit hook off from inside (so only the OS layers, Landlock and
seccomp, stand in the way). Every run must end in a clear refusal, and nothing the escape tries
to create, change or kill may be touched. On a kernel without the OS sandbox each run must be
refused up front instead (never skipped).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.logic import SandboxUnavailable, run_sandboxed, sandbox_support

SUPPORTED = sandbox_support().available
SECRETS = {"VERITASK_API_KEY": "vt-canary-secret-1", "OPENAI_API_KEY": "sk-canary-secret-2"}

HOOK_OFF = """\
import gc, sys
sys.modules["__main__"].BANNED_EVENTS = ("x",)
sys.modules["__main__"].BANNED = ("x",)
for _o in gc.get_objects():
    if type(_o).__name__ == "function" and _o.__name__ == "hook":
        _free = _o.__code__.co_freevars
        _ns = {}
        exec("def outer():\\n" + "".join(f"    {n} = None\\n" for n in _free)
             + "    def hook(event, args):\\n        return (" + "".join(f"{n}, " for n in _free)
             + ")\\n    return hook\\n", _ns)
        _o.__code__ = _ns["outer"]().__code__
"""
"""Switch the audit hook off from inside: its banned list through ``__main__``, then its code
replaced through ``gc.get_objects()`` (escapes 1 and 2 of the issue, used as a prelude)."""


@dataclass
class Scene:
    """What the escapes aim at, made fresh for each test."""

    canary: Path
    site_target: Path
    pth: Path
    xattr_target: Path
    shm_name: str
    victim: subprocess.Popen[bytes]
    created: list[Path] = field(default_factory=list)

    def escapes(self) -> dict[str, str]:
        """Each escape as the body of a function (four-space indented)."""
        c = str(self.canary)
        bodies = {
            "main_globals": f"import sys, os\nsys.modules['__main__'].BANNED = ('x',)\n"
            f"sys.modules['__main__'].BANNED_EVENTS = ('x',)\nreturn os.system('id > {c}')\n",
            "hook_code": HOOK_OFF + f"open({c!r}, 'w').write('escaped')\n",
            "realpath": "import os\nhere = os.getcwd()\n"
            "os.path.realpath = lambda p, *a, **k: here\n"
            f"open({c!r}, 'w').write('escaped')\n",
            "subinterpreter": "import _testcapi\n"
            f"return _testcapi.run_in_subinterp(\"import os; os.system('id > {c}')\")\n",
            "pth_dir_fd": f"import os\nfd = os.open({str(self.pth.parent)!r}, os.O_RDONLY)\n"
            f"out = os.open({self.pth.name!r}, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)\n"
            "os.write(out, b'# escaped')\n",
            "truncate_readonly": "import os\n"
            f"os.close(os.open({str(self.site_target)!r}, os.O_RDONLY | os.O_TRUNC))\n",
            "mkfifo": f"import os\nos.mkfifo({c!r})\n",
            "mknod": f"import os, stat\nos.mknod({c!r}, stat.S_IFCHR | 0o666, os.makedev(1, 3))\n",
            "setxattr": f"import os\nos.setxattr({str(self.xattr_target)!r}, 'user.vt', b'x')\n",
            "shm_open": "import os, _posixshmem\n"
            f"_posixshmem.shm_open({self.shm_name!r}, os.O_CREAT | os.O_RDWR, 0o600)\n",
            "pidfd_kill": "import os, signal\n"
            f"signal.pidfd_send_signal(os.pidfd_open({self.victim.pid}), signal.SIGKILL)\n",
            "kill": f"import os\nos.kill({self.victim.pid}, 9)\n",
            "parent_environ": "import os\n"
            "return open(f'/proc/{os.getppid()}/environ', 'rb').read().decode('latin-1')\n",
        }
        return bodies

    def assert_untouched(self) -> None:
        """Nothing an escape aimed at was created, changed or killed."""
        assert not self.canary.exists() and not self.canary.is_symlink()
        assert not self.pth.exists()
        assert self.site_target.read_text() == "keep"
        assert "user.vt" not in _xattrs(self.xattr_target)
        assert not Path("/dev/shm", self.shm_name.lstrip("/")).exists()
        assert self.victim.poll() is None, "the victim process was killed"


def _xattrs(path: Path) -> list[str]:
    try:
        return os.listxattr(path)
    except OSError:  # a filesystem without extended attributes
        return []


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    site = Path(sysconfig.get_paths()["purelib"])
    tag = uuid.uuid4().hex[:12]
    site_target = site / f"vt_escape_target_{tag}.txt"
    site_target.write_text("keep")
    xattr_target = tmp_path / "xattr-target.txt"
    xattr_target.write_text("keep")
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    made = Scene(
        canary=tmp_path / "canary",
        site_target=site_target,
        pth=site / f"vt_escape_{tag}.pth",
        xattr_target=xattr_target,
        shm_name=f"/vt-escape-{tag}",
        victim=victim,
    )
    try:
        yield made
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        site_target.unlink(missing_ok=True)
        made.pth.unlink(missing_ok=True)
        Path("/dev/shm", made.shm_name.lstrip("/")).unlink(missing_ok=True)


ESCAPE_NAMES = (
    "main_globals", "hook_code", "realpath", "subinterpreter", "pth_dir_fd", "truncate_readonly",
    "mkfifo", "mknod", "setxattr", "shm_open", "pidfd_kill", "kill", "parent_environ",
)  # fmt: skip


def _indent(body: str) -> str:
    return "".join(f"    {line}\n" for line in body.splitlines())


def _attack(scene: Scene, name: str, hook_off: bool) -> str:
    body = scene.escapes()[name]
    return (HOOK_OFF if hook_off else "") + body


def _assert_refused(error: str | None) -> None:
    """A refusal that says why, and leaks no secret."""
    text = error or ""
    assert any(word in text for word in ("not allowed", "outside the sandbox", "OS sandbox")), text
    assert not any(secret in text for secret in SECRETS.values())


@pytest.mark.parametrize("hook_off", [False, True], ids=["as_written", "hook_off"])
@pytest.mark.parametrize("name", ESCAPE_NAMES)
def test_escape_through_run_sandboxed(scene: Scene, name: str, hook_off: bool) -> None:
    code = "def f():\n" + _indent(_attack(scene, name, hook_off))
    if not SUPPORTED:
        with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):
            run_sandboxed(code, "f", [])
    else:
        result = run_sandboxed(code, "f", [])
        assert result.kind == "forbidden", result
        _assert_refused(result.error)
    scene.assert_untouched()


FAMILY_FILE = """
FAMILY = {{
    "id": "{id}",
    "version": "1",
    "category": "symbolic",
    "title": "Escape",
    "template": "What is [Input Slot 1]?",
    "answer_format": "An integer.",
}}


def generate(difficulty, rng):
{body}    return {{"n": 1}}, ["1"]


def solution(inputs):
    return inputs["n"]


def solution_other(inputs):
    return inputs["n"]
"""


@pytest.mark.parametrize("hook_off", [False, True], ids=["as_written", "hook_off"])
@pytest.mark.parametrize("name", ESCAPE_NAMES)
def test_escape_through_a_family_file(
    scene: Scene, name: str, hook_off: bool, tmp_path: Path
) -> None:
    family_id = f"escape_{name}"
    families = tmp_path / "families"
    families.mkdir()
    source = FAMILY_FILE.format(id=family_id, body=_indent(_attack(scene, name, hook_off)))
    (families / f"{family_id}.py").write_text(source, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        cli,
        ["logic", "generate", family_id, "--n", "1", "--difficulty", "1",
         "--families-dir", str(families), "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    if not SUPPORTED:
        assert "--unsafe-no-sandbox" in result.output
    else:
        assert "forbidden" in result.output and "generate" in result.output, result.output
        _assert_refused(result.output)
    assert not out.exists() or out.read_text() == ""
    scene.assert_untouched()


def test_the_parent_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    code = "import os\ndef f():\n    return dict(os.environ)\n"
    if not SUPPORTED:
        with pytest.raises(SandboxUnavailable):
            run_sandboxed(code, "f", [])
        return
    result = run_sandboxed(code, "f", [])
    assert result.ok, result
    assert not set(SECRETS) & set(result.value)
    assert not set(SECRETS.values()) & set(result.value.values())
    own = run_sandboxed("def f():\n    return open('/proc/self/environ').read()\n", "f", [])
    assert own.kind == "forbidden", own


def test_with_the_hook_off_only_the_os_layers_stop_a_socket() -> None:
    """The prelude really disables the hook (an import it refuses goes through), and the
    seccomp filter still refuses the socket itself."""
    code = "def f():\n" + _indent(HOOK_OFF + "import socket\nreturn socket.socket().fileno()\n")
    if not SUPPORTED:
        with pytest.raises(SandboxUnavailable):
            run_sandboxed(code, "f", [])
        return
    result = run_sandboxed(code, "f", [])
    assert result.kind == "forbidden" and "seccomp" in (result.error or ""), result
