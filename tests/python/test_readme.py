"""The README's Python example runs as written and its claims about the CLI hold."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_python_example_runs():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    flows = namespace["results"].flows
    assert list(flows["flow"]) == [0, 1]
    # Flow 1 is CBR at 40 x 1000 B = 320 kbit/s, well inside a 1 Mbit/s link: all carried.
    assert abs(flows.iloc[1]["throughput_bps"] - 320_000) / 320_000 < 0.02


def test_readme_cli_examples_name_existing_files():
    readme = (REPO / "README.md").read_text()
    for path in re.findall(r"(experiments/[\w/.-]+\.toml)", readme):
        assert (REPO / path).exists(), path
