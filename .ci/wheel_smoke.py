#!/usr/bin/env python3
"""tgt as a user installs it: build the sdist and wheel, check their metadata, install the wheel
(no extras) into a fresh venv and run every `tgt` command once on a tiny dataset.

A command that needs an extra must fail with one line holding the exact
``pip install 'tpugraphs-tools[...]'`` that fixes it; the script copies that line from the
output, runs it in the venv (pip finds the local wheel through ``--find-links``, the extra's
requirements come from the index or pip's cache) and runs the command again, which must work.
The catalog's hint is the light two-step install (keras-hub without tensorflow): after it a
keras-hub program lowers and collects, and tensorflow is not installed.

Usage: python .ci/wheel_smoke.py [--python python3.11] [--work DIR] [--keep]
Stdlib only; `.ci/run` calls it after `make test`. Exit 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# One hint: the extra, optionally followed by the catalog's `--no-deps` second step.
HINT = re.compile(r"pip install 'tpugraphs-tools\[(?P<extra>[a-z0-9-]+)\]'"
                  r"(?: && pip install --no-deps '[^']+')?")
EXTRAS = {"publish", "trees", "ray", "catalog", "cuda12", "cuda13"}
# Fast measurement for a smoke run (the labels are not the point here).
QUICK = ("--engine", "fixed", "--fixed-rounds", "2", "--warmup", "0", "--seed", "0")
SMALL_MODEL = ("--epochs", "1", "--hidden", "16", "--layers", "1", "--configs-per-graph", "2",
               "--batch-graphs", "2")


class SmokeFailure(Exception):
    """A check that did not hold: the message says which and shows the output."""


class Smoke:
    """The build, the user's venv and the commands run in it, each check counted."""

    def __init__(self, work: Path, python: str) -> None:
        self.work, self.python = work, python
        self.dist = work / "dist"
        self.user = work / "user-venv"
        self.run_dir = work / "run"
        self.checks = 0
        init = (ROOT / "tpugraphs_tools" / "__init__.py").read_text()
        found = re.search(r'^__version__ = "([^"]+)"$', init, re.M)
        if found is None:
            raise SystemExit("tpugraphs_tools/__init__.py: no __version__ line")
        self.version = found[1]

    def check(self, ok: bool, what: str, output: str = "") -> None:
        if not ok:
            raise SmokeFailure(f"{what}\n{output[-4000:]}")
        self.checks += 1

    def sh(self, args: list[str] | str, *, expect: int | None = 0, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``args`` (a list, or a shell line), echo it with its time, check its exit code."""
        shown = args if isinstance(args, str) else " ".join(map(str, args))
        start = time.monotonic()
        done = subprocess.run(args, cwd=cwd or self.run_dir, env=env or self.env(), text=True,
                              capture_output=True, shell=isinstance(args, str),
                              executable="/bin/bash" if isinstance(args, str) else None,
                              stdin=subprocess.DEVNULL)
        print(f"$ {shown}  [exit {done.returncode}, {time.monotonic() - start:.0f} s]",
              flush=True)
        if expect is not None:
            self.check(done.returncode == expect,
                       f"`{shown}` exited {done.returncode}, expected {expect}",
                       done.stdout + done.stderr)
        return done

    def env(self) -> dict[str, str]:
        """The user's shell: the venv first on PATH, pip finding the local wheel."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.user / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.user)
        env["PIP_FIND_LINKS"] = f"{self.dist} {env.get('PIP_FIND_LINKS', '')}".strip()
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return env

    def tgt(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        return self.sh(["tgt", *args], expect=expect)

    # -- build and metadata --------------------------------------------------------------

    def build(self) -> tuple[Path, Path]:
        """sdist, then the wheel built from the sdist (so the sdist is complete), twine-checked."""
        tools = self.work / "tools-venv"
        self.sh([self.python, "-m", "venv", str(tools)], cwd=self.work)
        self.sh([str(tools / "bin" / "pip"), "install", "--quiet", "build", "twine"],
                cwd=self.work)
        self.sh([str(tools / "bin" / "python"), "-m", "build", "--outdir", str(self.dist),
                 str(ROOT)], cwd=self.work)
        [sdist] = self.dist.glob("*.tar.gz")
        [wheel] = self.dist.glob("*.whl")
        self.sh([str(tools / "bin" / "twine"), "check", "--strict", str(sdist), str(wheel)],
                cwd=self.work)
        return sdist, wheel

    def check_metadata(self, sdist: Path, wheel: Path) -> None:
        """The wheel's version is __version__, its extras are the documented ones, the schemas
        and the `tgt` entry point ship; the sdist holds what a rebuild needs."""
        with zipfile.ZipFile(wheel) as whl:
            names = whl.namelist()
            [meta_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
            meta = Parser().parsestr(whl.read(meta_name).decode())
            [entry_name] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
            entry_points = whl.read(entry_name).decode()
        self.check(meta["Version"] == self.version,
                   f"wheel version {meta['Version']} != __version__ {self.version}")
        self.check(set(meta.get_all("Provides-Extra") or []) >= EXTRAS,
                   f"wheel extras {meta.get_all('Provides-Extra')} lack some of {EXTRAS}")
        self.check(any(n.startswith("tpugraphs_tools/_schemas/") for n in names),
                   "the wheel ships no schemas (tpugraphs_tools/_schemas/)")
        self.check("tgt = tpugraphs_tools.cli:main" in entry_points,
                   "the wheel has no `tgt` entry point", entry_points)
        with tarfile.open(sdist) as tar:
            members = {m.name.split("/", 1)[-1] for m in tar.getmembers()}
        self.check({"pyproject.toml", "README.md", "tpugraphs_tools/__init__.py"} <= members
                   and any(m.startswith("schemas/") for m in members),
                   "the sdist lacks pyproject.toml, README.md, the package or schemas/")

    def install(self, wheel: Path) -> None:
        """The wheel alone, no extras, in a fresh venv; tgt runs from there, not the tree."""
        self.sh([self.python, "-m", "venv", str(self.user)], cwd=self.work)
        self.sh(["pip", "install", "--quiet", str(wheel)], cwd=self.work)
        where = self.sh(["python", "-c", "import tpugraphs_tools; print(tpugraphs_tools.__file__)"])
        self.check(where.stdout.strip().startswith(str(self.user)),
                   "tpugraphs_tools is imported from outside the venv", where.stdout)

    # -- commands ------------------------------------------------------------------------

    def hint_of(self, done: subprocess.CompletedProcess[str], extra: str) -> tuple[str, str]:
        """The one install hint in ``done``'s output (and its line); it must name ``extra``."""
        output = done.stdout + done.stderr
        hints = {m.group(0) for m in HINT.finditer(output)}
        self.check(len(hints) == 1, f"expected one `pip install 'tpugraphs-tools[{extra}]'` "
                   f"hint, found {sorted(hints)}", output)
        [hint] = hints
        named = HINT.fullmatch(hint)
        self.check(named is not None and named["extra"] == extra,
                   f"the hint {hint!r} names another extra than [{extra}]", output)
        lines = [line for line in output.splitlines() if hint in line]
        self.check(len(lines) == 1, f"the hint {hint!r} is not on one line", output)
        return hint, lines[0]

    def fix_with_hint(self, failed: subprocess.CompletedProcess[str], extra: str) -> None:
        """Copy the hint out of the failed command's output and run it as the user would."""
        hint, line = self.hint_of(failed, extra)
        print(f"  {line}")
        self.sh(hint)

    def dataset_commands(self) -> None:
        """Every command on a tiny dataset collected here: two zoo programs, 4 configs each."""
        out = self.tgt("--version")
        self.check(out.stdout.strip() == f"tgt, version {self.version}",
                   f"tgt --version printed {out.stdout.strip()!r}, not {self.version}")
        listed = self.tgt("--help").stdout
        commands = set(re.findall(r"^  ([a-z]+)\s", listed.split("Commands:")[-1], re.M))
        self.check(commands == {"programs", "collect", "validate", "partition", "baseline",
                                "export", "import", "publish", "report"},
                   f"tgt's commands changed ({sorted(commands)}): smoke-test the new ones",
                   listed)
        for command in sorted(commands):
            self.tgt(command, "--help")
        self.tgt("programs")
        self.tgt("collect", "--program", "gpt_decode", "--program", "bert", "--preset", "tiny",
                 "--configs", "4", *QUICK, "--out", "data")
        manifest = json.loads((self.run_dir / "data" / "manifest.json").read_text())
        self.check(manifest["tgt_version"] == self.version,
                   f"manifest tgt_version {manifest['tgt_version']} != {self.version}")
        self.tgt("collect", "--status", "data")
        self.tgt("validate", "data")
        self.tgt("partition", "data", "--segments", "4")
        self.tgt("export", "data", "--out", "tree")
        self.tgt("import", "tree", "--out", "imported")
        self.tgt("validate", "imported")
        self.tgt("publish", "data", "--out", "release")
        self.check((self.run_dir / "release" / "README.md").is_file(), "publish wrote no card")

    def extra_commands(self) -> None:
        """Each command that needs an extra: the hint, then (publish, trees, catalog) the fix."""
        self.fix_with_hint(self.tgt("report", "data", "--out", "report", expect=1), "publish")
        self.tgt("report", "data", "--out", "report")
        self.check((self.run_dir / "report" / "index.html").is_file(), "report wrote no page")

        gbdt_row = re.compile(r"^\s+test\s+gbdt\s", re.M)
        before = self.tgt("baseline", "data", *SMALL_MODEL)
        self.check(not gbdt_row.search(before.stdout), "gbdt scored without lightgbm")
        self.fix_with_hint(before, "trees")
        after = self.tgt("baseline", "data", *SMALL_MODEL)
        self.check(bool(gbdt_row.search(after.stdout)),
                   "gbdt is not scored after the [trees] hint", after.stdout)

        # ray: the hint and its extra only (a local Ray cluster is tests/publish's work)
        ray = self.tgt("validate", "data", "--executor", "ray", expect=1)
        print(f"  {self.hint_of(ray, 'ray')[1]}")

        program = ("--program", "keras_hub/bert", "--preset", "tiny")
        self.fix_with_hint(self.tgt("collect", *program, "--configs", "0", "--out", "kh",
                                    expect=1), "catalog")
        self.tgt("collect", *program, "--configs", "2", *QUICK, "--out", "kh")
        self.tgt("validate", "kh")
        tf = self.sh(["python", "-c", "import importlib.util as u; "
                      "print(u.find_spec('tensorflow') is None)"])
        self.check(tf.stdout.strip() == "True", "the catalog's light route installed tensorflow")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter of the fresh venvs (default: this one)")
    parser.add_argument("--work", type=Path, help="work folder (default: a new temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    ns = parser.parse_args()
    work = (ns.work or Path(tempfile.mkdtemp(prefix="tgt-wheel-smoke-"))).resolve()
    smoke = Smoke(work, ns.python)
    smoke.run_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        sdist, wheel = smoke.build()
        smoke.check_metadata(sdist, wheel)
        smoke.install(wheel)
        smoke.dataset_commands()
        smoke.extra_commands()
    except SmokeFailure as failure:
        print(f"wheel smoke test FAILED after {smoke.checks} checks: {failure}", file=sys.stderr)
        print(f"(work folder kept: {work})", file=sys.stderr)
        return 1
    print(f"wheel smoke test: {smoke.checks} checks held in {time.monotonic() - start:.0f} s "
          f"(tpugraphs-tools {smoke.version}, {wheel.name})")
    if not ns.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
