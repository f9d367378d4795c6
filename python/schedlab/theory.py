"""Closed-form results to overlay on measured curves.

Formulas from Zhang's thesis (seed 000, chapter 3) and classic queueing theory. Quanta and
packet sizes are bytes, rates bit/s, delays seconds.

A scenario declares overlays in ``[[report.theory]]`` tables::

    [[report.theory]]
    model = "drr_plusplus_mean_delay"     # a function below
    flow = 0                              # the measured flow it is drawn beside
    label = "DRR++ analysis (eq. 3.1)"
    quantum_lc = 2000                     # numbers, unit strings ("125kbit"),
    quantum_be = "link[0].params.x"       # or key paths evaluated at each sweep point
    bottleneck = "link[0].rate"
    rate_lc_pps = 15
    mean_size_lc = 410
"""

from __future__ import annotations

import math

from schedlab.scenario import ScenarioError, get_path


def drr_plusplus_mean_delay(quantum_lc, quantum_be, bottleneck, rate_lc_pps, mean_size_lc) -> float:
    """Thesis theorem 1 (eq. 3.1): D_LC ≈ 0.5·Q_i / (BNBW − Q_i·λ_LC/ν_LC) with
    Q_i = Q_LC + Q_BE and ν_LC = ⌊Q_LC/n_LC⌋, quanta in bytes (converted to bits). NaN where the
    approximation has no positive denominator (the LC flow is not sustainable)."""
    q_i = 8.0 * (quantum_lc + quantum_be)
    nu = math.floor(quantum_lc / mean_size_lc)
    if nu < 1:
        return math.nan
    denominator = bottleneck - q_i * rate_lc_pps / nu
    return 0.5 * q_i / denominator if denominator > 0 else math.nan


def drr_plusplus_delay_bound(sigma, rho, quantum_lc, quantum_be, bottleneck) -> float:
    """Thesis theorem 2: D̂_LC ≤ σ/ρ + (Q_LC + 3·Q_BE)/BNBW, σ in bytes, ρ in bit/s."""
    return 8.0 * sigma / rho + 8.0 * (quantum_lc + 3 * quantum_be) / bottleneck


def drr_plusplus_latency(quantum_lc, quantum_be, bottleneck) -> float:
    """Thesis eq. 3.2: the LR-server latency of DRR++, Θ ≤ (Q_LC + 3·Q_BE)/BNBW."""
    return 8.0 * (quantum_lc + 3 * quantum_be) / bottleneck


def drr_plus_latency(quantum_lc, quantum_be_total, bottleneck) -> float:
    """Thesis eq. 3.3: Θ ≤ (3F − 2·Q_LC)/BNBW with F = Q_LC + ΣQ_BE."""
    frame = quantum_lc + quantum_be_total
    return 8.0 * (3 * frame - 2 * quantum_lc) / bottleneck


def drr_plusplus_max_vacation(quantum_be, bottleneck) -> float:
    """Thesis §5.1.1: the largest LC vacation in DRR++, Q_BE/BNBW (85.3 ms for 2666 B at
    250 kbit/s)."""
    return 8.0 * quantum_be / bottleneck


def mm1_mean_delay(arrival_rate_pps, service_rate_pps) -> float:
    """M/M/1 mean time in system 1/(μ − λ)."""
    if arrival_rate_pps >= service_rate_pps:
        return math.nan
    return 1.0 / (service_rate_pps - arrival_rate_pps)


def md1_mean_delay(arrival_rate_pps, service_rate_pps) -> float:
    """M/D/1 mean time in system (Pollaczek–Khinchine): 1/μ + ρ/(2μ(1 − ρ))."""
    rho = arrival_rate_pps / service_rate_pps
    if rho >= 1:
        return math.nan
    return 1.0 / service_rate_pps + rho / (2 * service_rate_pps * (1 - rho))


MODELS = {
    "drr_plusplus_mean_delay": drr_plusplus_mean_delay,
    "drr_plusplus_delay_bound": drr_plusplus_delay_bound,
    "drr_plusplus_latency": drr_plusplus_latency,
    "drr_plus_latency": drr_plus_latency,
    "drr_plusplus_max_vacation": drr_plusplus_max_vacation,
    "mm1_mean_delay": mm1_mean_delay,
    "md1_mean_delay": md1_mean_delay,
}

_RESERVED = {"model", "flow", "label", "series"}


def _number(value, scenario_data: dict, where: str) -> float:
    from schedlab import _core

    if isinstance(value, bool):
        raise ScenarioError(f"{where} = {value!r}: must be a number, a unit string or a key path")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            resolved = get_path(scenario_data, value)
        except (KeyError, ScenarioError):
            resolved = value
        if isinstance(resolved, (int, float)) and not isinstance(resolved, bool):
            return float(resolved)
        if isinstance(resolved, str):
            for parse in (_core.parse_rate, _core.parse_size, _core.parse_duration_s):
                try:
                    return float(parse(resolved))
                except ValueError:
                    continue
    raise ScenarioError(f"{where} = {value!r}: must be a number, a unit string or a key path to one")


def validate_report(data: dict) -> None:
    """Check a scenario's ``[report]`` table: known keys, and every ``[[report.theory]]``
    overlay evaluable on the scenario (known model, the model's arguments, numeric values).
    Raises :class:`ScenarioError` naming the key and value."""
    report = data.get("report")
    if report is None:
        return
    if not isinstance(report, dict):
        raise ScenarioError(f"report = {report!r}: must be a table")
    for key, value in report.items():
        if key not in ("title", "x_label", "theory"):
            raise ScenarioError(f"report.{key} = {value!r}: unknown key; accepted keys: title, x_label, theory")
    overlays = report.get("theory", [])
    if not isinstance(overlays, list):
        raise ScenarioError(f"report.theory = {overlays!r}: must be an array of tables ([[report.theory]])")
    for index, overlay in enumerate(overlays):
        evaluate(overlay, data, index)


def evaluate(table: dict, scenario_data: dict, index: int = 0) -> float:
    """The value of one ``[[report.theory]]`` overlay for a scenario (one sweep point)."""
    where = f"report.theory[{index}]"
    model = table.get("model")
    if model not in MODELS:
        raise ScenarioError(f"{where}.model = {model!r}: unknown model; known: {', '.join(MODELS)}")
    args = {k: _number(v, scenario_data, f"{where}.{k}") for k, v in table.items() if k not in _RESERVED}
    try:
        return MODELS[model](**args)
    except TypeError as e:
        raise ScenarioError(f"{where}: {e}") from None
