"""Means and confidence intervals over replications."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _stats


def mean_ci95(values, method: str = "student_t") -> tuple[float, float]:
    """Mean of ``values`` and the half-width of its 95% confidence interval: Student t with
    n−1 degrees of freedom (``"student_t"``), or the thesis's 1.96·σ/√n (``"normal"``).
    The half-width is NaN for fewer than two values."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if len(x) == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan
    sd = float(x.std(ddof=1))
    if method == "student_t":
        q = float(_stats.t.ppf(0.975, len(x) - 1))
    elif method == "normal":
        q = 1.96
    else:
        raise ValueError(f"ci method {method!r}: use 'student_t' or 'normal'")
    return mean, q * sd / math.sqrt(len(x))


def jain_index(values) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) of non-negative values (1 = perfectly fair)."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0 or not np.any(x):
        return math.nan
    x = x / x.max()  # scale first so that squares of tiny values do not underflow
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))
