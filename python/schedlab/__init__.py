"""schedlab: a laboratory for packet scheduling.

The scheduling disciplines, the replay tool and the simulator are written in Rust
(``schedlab._core``); this package is the Python front: the ``schedlab`` command, scenario
handling, sweeps, figures and reports.

>>> import schedlab
>>> s = schedlab.Scenario.from_toml("experiments/examples/single_bottleneck.toml")  # doctest: +SKIP
>>> schedlab.run(s).flows  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab._core import InputError, __version__
from schedlab._core import disciplines as _disciplines
from schedlab._core import replay as _replay

if TYPE_CHECKING:
    from schedlab.api import Results, run, validate
    from schedlab.scenario import Scenario, ScenarioError

#: Names imported on first use (PEP 562), so that ``import schedlab`` does not load pandas:
#: the commands that do not need it (``gateway``, ``gen``, ``sink``, ``measure``, and the
#: processes ``measure`` starts) start and exit in a fraction of the time.
_LAZY = {
    "Results": "schedlab.api",
    "run": "schedlab.api",
    "validate": "schedlab.api",
    "Scenario": "schedlab.scenario",
    "ScenarioError": "schedlab.scenario",
}

__all__ = [
    "InputError",
    "Results",
    "Scenario",
    "ScenarioError",
    "__version__",
    "disciplines",
    "replay",
    "run",
    "validate",
]


def disciplines() -> list[dict]:
    """Every built-in discipline with its parameters (names, units, defaults)."""
    return _disciplines()


def replay(config: str, trace: str, out: str, progress=None) -> dict:
    """Replay the packet trace ``trace`` (CSV ``time_s,flow,size_bytes[,class,deadline_s]``)
    through the scheduler and link of ``config`` (TOML) and write one row per packet to
    ``out``. Returns the per-flow summary. Raises :class:`InputError` on bad input.
    ``progress(percent_done, 100)`` is called at most every 0.2 s; Ctrl-C stops the replay
    (``KeyboardInterrupt``) and leaves no ``out`` file."""
    return _replay(str(config), str(trace), str(out), progress)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'schedlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
