"""The wheel: every subpackage inside, and an installed copy finds its personalities and says where
its model goes (not only the editable checkout)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT), "-w", str(out)],
        check=True,
        cwd=out,
    )
    return next(out.glob("symbiote-*.whl"))


def test_wheel_carries_every_subpackage_and_the_personalities(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "symbiote").rglob("__init__.py")}
    assert packages <= {Path(n).parent.as_posix() for n in names}
    personalities = {p.name for p in (ROOT / "personalities").glob("*.md")}
    assert personalities and {Path(n).name for n in names if "/share/symbiote/personalities/" in n} == personalities
    # The memory card ships built: the server needs no Node at run time, and none of its sources or packages.
    card = [n for n in names if n.startswith("symbiote/mcp/card/")]
    assert card == ["symbiote/mcp/card/memory-card.html"]


def test_installed_wheel_finds_its_personalities_and_names_its_model_dir(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # The wheel alone (no dependencies) into the new venv; --ignore-installed leaves this environment's own copy alone.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--ignore-installed",
            "--prefix",
            str(venv),
            str(wheel),
        ],
        check=True,
    )
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # the dependencies, from here
    probe = (
        "import symbiote, symbiote.config as c\n"
        "from symbiote.mcp.personality import load_personality\n"
        "s = c.Settings()\n"
        "print(symbiote.__file__)\n"
        "print(s.personalities_dir)\n"
        "print(load_personality(s.personalities_dir, 'v2').variant)\n"
        "print(s.model_dir)\n"
    )
    out = subprocess.run(
        [str(python), "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    ).stdout.splitlines()
    assert out[0].startswith(str(venv))  # the installed copy, not the checkout
    assert Path(out[1]) == venv / "share" / "symbiote" / "personalities"
    assert out[2] == "v2"
    assert Path(out[3]) == tmp_path / ".local" / "share" / "symbiote" / "models" / "all-MiniLM-L6-v2"
