"""Print pip constraints pinning every dependency of pyproject.toml to its declared minimum.

`make test-lowest` installs them into a separate venv and runs the tests there, so the minimums in
pyproject.toml are versions that are tested, not guesses. A dependency without a `>=` minimum is an error.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def lowest(requirements) -> list[str]:
    pins = []
    for requirement in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,.*)?", requirement)
        if not match:
            sys.exit(f"{requirement!r}: give every dependency a minimum (name>=X.Y) so it can be tested")
        pins.append(f"{match[1]}=={match[2]}")
    return pins


if __name__ == "__main__":
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    print("\n".join(lowest(project["dependencies"])))
