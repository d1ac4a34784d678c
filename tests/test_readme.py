"""Every command and code block of README.md runs as written (issue 33: the README had
drifted: a `jitc show` missing arguments, a Dask snippet that failed as a script).

The fenced blocks are extracted and run in order, in one directory where `examples/` is
the repository's, as a user runs them (tests/fresh.py: jitc's default settings, a fresh
process each): a ```python block as a script, each line of a plain block as a shell
command. Two parts are not run here, by name: `pip install ...` (the environment running
these tests is that install) and the test command itself (`python -m pytest`, which CI
runs)."""

import os
import re

from tests.fresh import run, run_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_RUN_HERE = ("pip install ", "python -m pytest")


def blocks():
    """(language, text) of each fenced block of README.md, in order."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S)


def commands(block: str) -> list[str]:
    """The shell commands of a plain block, less the parts run elsewhere (NOT_RUN_HERE)."""
    out = []
    for line in block.splitlines():
        kept = [
            part.strip()
            for part in line.split("&&")
            if part.strip() and not part.strip().startswith(NOT_RUN_HERE)
        ]
        if kept:
            out.append(" && ".join(kept))
    return out


def test_the_readme_has_the_blocks_this_test_runs():
    found = blocks()
    assert [lang for lang, _ in found].count("python") >= 3
    skipped = [
        line
        for lang, b in found
        if not lang
        for line in b.splitlines()
        if any(part.strip().startswith(NOT_RUN_HERE) for part in line.split("&&"))
    ]
    assert skipped == [
        "pip install -e . && python examples/quickstart.py",
        'pip install -e ".[test]" && python -m pytest -q',
    ]


def test_every_readme_block_runs(tmp_path):
    os.symlink(os.path.join(ROOT, "examples"), tmp_path / "examples")
    ran = 0
    for k, (lang, block) in enumerate(blocks()):
        if lang == "python":
            run(tmp_path, block, name=f"readme_block_{k}.py")
            ran += 1
            continue
        for command in commands(block):
            run_command(tmp_path, command)
            ran += 1
    assert ran >= 10
    assert (tmp_path / "build" / "step.o").is_file() and (tmp_path / "step.html").is_file()
    assert (tmp_path / "trace.json").is_file()
