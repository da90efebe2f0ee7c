"""Active learning: fit, choose a batch of candidates, ask an oracle for their labels, refit; round by round.

:func:`run_loop` runs the rounds of a :class:`LoopConfig` in a directory it checkpoints after every
step, so a killed loop resumes where it stopped (the same call on the same directory):

1. fit the model on the labelled rows (:func:`sigmabnn.fitting.run.run_fit` with the loop's
   :class:`~sigmabnn.fitting.spec.FitSpec`); from the second round on the networks start at the
   previous round's (``initial_positions``: an ensemble's members, an MCMC run's last draw of each
   chain, from which MAP pretraining starts: refits from the previous posterior's modes); the
   model is saved as ``round_<k>/model``;
2. choose ``batch_size`` candidates not yet chosen (:func:`sigmabnn.acquisition.select`);
3. label them with the oracle: a Python callable or a :class:`CommandOracle` (a shell command
   template run once per batch); the labels are saved as ``round_<k>/labels.csv`` (atomically)
   and the state (``state.json``: rounds done, chosen candidate positions, history) is committed.

Audit rows (``audit_fraction > 0``). Actively chosen rows are not a random sample of the pool, so
validation rows drawn from them would early-stop and recalibrate the fit on the inputs the criterion
likes, not on those predictions are wanted for. With an audit fraction ``f``, ``round(f n)`` rows of
every batch of ``n`` (the random first batch included) are drawn uniformly at random from the rows
not yet chosen, labelled with the others and kept as the fits' validation rows (early stopping and
``recalibrate="heldout"``): a random sample of the pool however the rest was chosen. Each labelled
row's role is the column :data:`AUDIT_COLUMN` (``"val"`` or ``"train"``; of user-given initial rows
a seeded random ``f`` are ``"val"``), and the fits split by it (``split_column``) instead of the
spec's random split. On by default (``f = 0.1``); 0 turns it off.

Without initial labelled rows the first batch (``initial_size`` rows) is chosen at random. The loop
stops once ``max_labelled`` rows are labelled (after fitting on them) or the pool is exhausted.
Rows the oracle returns without a finite positive target (for a log target) are kept out of the
fits but not chosen again.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sigmabnn.acquisition import BATCH_MODES, CRITERIA, select
from sigmabnn.data.features import required_columns
from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.fitting.run import run_fit
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.io.atomic import atomic_write_json, atomic_write_text
from sigmabnn.io.model_file import load_model, save_model

__all__ = ["AUDIT_COLUMN", "CommandOracle", "LoopConfig", "LoopResult", "Oracle", "refit_starts", "run_loop"]

#: ``oracle(rows) -> labelled``: the chosen candidate rows in, the same rows (same order, any
#: columns) with the target column filled out.
Oracle = Callable[[pd.DataFrame], pd.DataFrame]

STATE_FILE = "state.json"
#: The labelled rows' role column with audit rows (module docstring): ``"val"`` or ``"train"``.
AUDIT_COLUMN = "active_split"
#: Offset of the audit draws' seeds from the round's (so they are independent of a random criterion's).
_AUDIT_SEED = 1_000_003


@dataclass(frozen=True)
class LoopConfig:
    """The rounds of an active-learning loop (checked once, in ``__post_init__``).

    Attributes:
        spec: the fit of every round (its target is the column the oracle fills).
        batch_size: candidates labelled per round.
        max_labelled: stop after fitting on this many labelled rows.
        criterion, batch: of :func:`sigmabnn.acquisition.select`.
        initial_size: rows of the random first batch when the loop starts without labelled rows.
        warm_start: refit from the previous round's networks (``initial_positions``); from fresh
            initialisations when false. Which is better depends on the criterion and the data
            (``benchmarks/results/active_learning_pilot.md``, validation rows of the built-in cross
            sections: warm refits helped ``epig`` on two processes of three and random batches on one;
            with a small training budget they can stall where fresh ones keep improving).
        seed: seed of the random first batch and of each round's random criterion
            (``seed + round``).
        audit_fraction: the share of every batch drawn at random and kept for validation
            (module docstring); 0: none, the fits split the labelled rows as the spec says.
    """

    spec: FitSpec
    batch_size: int
    max_labelled: int
    criterion: str = "epig"
    batch: str = "greedy"
    initial_size: int = 0
    warm_start: bool = True
    seed: int = 0
    audit_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.criterion not in CRITERIA:
            raise InputError(f"unknown criterion {self.criterion!r}; choose one of {', '.join(CRITERIA)}")
        if self.batch not in BATCH_MODES:
            raise InputError(f"unknown batch mode {self.batch!r}; choose one of {', '.join(BATCH_MODES)}")
        for name in ("batch_size", "max_labelled"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if int(self.initial_size) < 0:
            raise InputError(f"initial_size must be >= 0, got {self.initial_size}")
        if not 0.0 <= float(self.audit_fraction) < 1.0:
            raise InputError(f"audit_fraction must be in [0, 1), got {self.audit_fraction}")


class LoopResult(NamedTuple):
    """What :func:`run_loop` returns: the last model, all labelled rows and one record per fit."""

    fitted: FittedModel | None
    labelled: pd.DataFrame
    history: list[dict[str, Any]]


class CommandOracle:
    """An oracle that runs a shell command per batch.

    ``template`` is formatted with ``{input}`` (a CSV of the chosen rows, all their columns) and
    ``{output}`` (the CSV the command must write: the same rows in the same order with the target
    column), both shell-quoted, e.g. ``"python run_prospino.py {input} {output}"``. The files live
    in ``workdir`` (one pair per call, numbered). A failing command, or an output without the
    target column or with another number of rows, raises :class:`~sigmabnn.errors.InputError`, as does
    (in :func:`run_loop`) an output whose columns shared with the input (an id, the inputs) differ from it.
    """

    def __init__(self, template: str, target: str, workdir: str | Path, timeout: float | None = None) -> None:
        if "{input}" not in template or "{output}" not in template:
            raise InputError("the oracle command must contain {input} and {output}")
        self.template, self.target, self.workdir, self.timeout = template, target, Path(workdir), timeout
        self.calls = 0

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.calls += 1
        inp, out = (self.workdir / f"oracle_{self.calls:04d}_{k}.csv" for k in ("in", "out"))
        atomic_write_text(inp, rows.to_csv(index=False))
        out.unlink(missing_ok=True)
        cmd = self.template.format(input=shlex.quote(str(inp)), output=shlex.quote(str(out)))
        proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=self.timeout)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
            raise InputError(f"oracle command failed with exit code {proc.returncode}: {last}")
        if not out.exists():
            raise InputError(f"oracle command wrote no output file {out}")
        labelled = pd.read_csv(out)
        if self.target not in labelled.columns or len(labelled) != len(rows):
            raise InputError(
                f"oracle output {out} must hold the {len(rows)} rows with a {self.target!r} column, "
                f"got {len(labelled)} rows and columns {', '.join(map(str, labelled.columns))}"
            )
        return labelled


def refit_starts(fitted: FittedModel) -> np.ndarray:
    """``[k, d]`` the networks a refit starts from: every member of an ensemble ``[1, M, d]``, the
    last draw of each chain of an MCMC run ``[C, S, d]``."""
    positions = np.asarray(fitted.draws.positions)
    return positions[0] if positions.shape[0] == 1 else positions[:, -1]


def _mismatch(rows: pd.DataFrame, labelled: pd.DataFrame, target: str) -> str | None:
    """Where the oracle's rows differ from the rows it was given, in the columns both carry (other than
    ``target``): ``"column 'a', data row 3"`` (1-based), or ``None``. Numbers compare to a relative
    1e-9 (a CSV round trip keeps them to the last digit), other values as text."""
    for col in [c for c in rows.columns if c in labelled.columns and c != target]:
        given, back = rows[col].reset_index(drop=True), labelled[col].reset_index(drop=True)
        if pd.api.types.is_numeric_dtype(given) and pd.api.types.is_numeric_dtype(back):
            a, b = given.to_numpy(np.float64), back.to_numpy(np.float64)
            same = np.isclose(a, b, rtol=1e-9, atol=0.0, equal_nan=True)
        else:
            same = (given.astype(str) == back.astype(str)).to_numpy()
        if not same.all():
            return f"column {col!r}, data row {int(np.flatnonzero(~same)[0]) + 1}"
    return None


def _labels(oracle: Oracle, rows: pd.DataFrame, target: str) -> pd.DataFrame:
    """The oracle's labels of ``rows``: ``rows`` with the target column the oracle returned. The oracle must
    keep the rows' order: a column it returns that the rows carry (an id, the inputs) must match them."""
    labelled = oracle(rows.reset_index(drop=True))
    if not isinstance(labelled, pd.DataFrame) or target not in labelled.columns or len(labelled) != len(rows):
        raise InputError(f"the oracle must return the {len(rows)} rows with a {target!r} column")
    where = _mismatch(rows, labelled, target)
    if where is not None:
        raise InputError(f"the oracle returned its {len(rows)} rows in another order or changed them ({where})")
    out = rows.reset_index(drop=True).copy()
    out[target] = pd.to_numeric(labelled[target], errors="coerce").to_numpy()
    if not np.isfinite(out[target].to_numpy(np.float64)).any():  # some missing: the fit drops and counts them
        raise InputError(
            f"the oracle's {len(rows)} labels of {target!r} are all missing or not finite numbers "
            f"(the first: {labelled[target].iloc[0]!r})"
        )
    return out


def _check_inputs(pool: pd.DataFrame, initial: pd.DataFrame | None, spec: FitSpec) -> None:
    """Refuse, before any oracle call, a pool (or initial table) without the inputs the fits need, or initial
    rows without the target."""
    need = [] if spec.data.features is None else required_columns(spec.data.features, spec.data.derive)
    tables = [("candidate pool", pool, need)]
    if initial is not None:
        tables.append(("initial table", initial, [*need, spec.data.target]))
    for what, table, columns in tables:
        missing = [c for c in columns if c not in table.columns]
        if missing:
            raise InputError(f"the {what} lacks the column(s) {', '.join(map(repr, missing))}")


def _load_state(directory: Path, config: LoopConfig, n_pool: int) -> dict[str, Any]:
    path = directory / STATE_FILE
    if not path.exists():
        return {"round": 0, "fitted_round": -1, "chosen": [], "history": [], "pool_rows": n_pool}
    state = json.loads(path.read_text())
    if state.get("pool_rows") != n_pool:
        raise InputError(f"{directory} holds a loop over {state.get('pool_rows')} candidates, not {n_pool}")
    return state


def _labelled(directory: Path, initial: pd.DataFrame | None, rounds: int) -> pd.DataFrame:
    parts = [] if initial is None else [initial.reset_index(drop=True)]
    parts += [pd.read_csv(directory / f"round_{k}" / "labels.csv") for k in range(rounds)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _usable(labelled: pd.DataFrame, spec: FitSpec) -> pd.DataFrame:
    y = pd.to_numeric(labelled[spec.data.target], errors="coerce")
    ok = np.isfinite(y) & ((y > 0) if spec.data.log_target else True)
    return labelled[ok.to_numpy()]


def _roles(data: pd.DataFrame, config: LoopConfig) -> np.ndarray:
    """Each row's role with audit rows: its label's, and for rows without one (initial rows the user
    gave) a seeded random ``audit_fraction`` of them ``"val"``, the same in every round."""
    roles = data[AUDIT_COLUMN].to_numpy(object).copy() if AUDIT_COLUMN in data.columns else np.full(len(data), None)
    missing = np.flatnonzero(pd.isna(roles))
    roles[missing] = "train"
    val = np.random.default_rng(config.seed).permutation(missing)[: int(round(config.audit_fraction * missing.size))]
    roles[val] = "val"
    return roles


def _fit_round(directory: Path, config: LoopConfig, state: dict, labelled: pd.DataFrame, evaluate: Any) -> FittedModel:
    """Fit round ``state["round"]`` (warm-started from the previous model), save it, commit."""
    k = state["round"]
    starts = None
    if config.warm_start and k > 0 and (directory / f"round_{k - 1}" / "model").exists():
        starts = refit_starts(load_model(directory / f"round_{k - 1}" / "model"))
    t0 = time.perf_counter()
    data, spec = _usable(labelled, config.spec), config.spec
    if config.audit_fraction > 0:
        data = data.assign(**{AUDIT_COLUMN: _roles(data, config)})
        spec = spec._replace(data=spec.data._replace(split_column=AUDIT_COLUMN))
    fitted, _ = run_fit(data, spec, progress=False, initial_positions=starts)
    record = {"round": k, "n_labelled": len(labelled), "n_usable": len(data),
              "fit_seconds": time.perf_counter() - t0, "warm_start": starts is not None}  # fmt: skip
    if evaluate is not None:
        record.update(evaluate(fitted))
    (directory / f"round_{k}").mkdir(exist_ok=True)
    save_model(fitted, directory / f"round_{k}" / "model")
    state["history"] = [h for h in state["history"] if h["round"] != k] + [record]
    state["fitted_round"] = k
    atomic_write_json(directory / STATE_FILE, state)
    return fitted


def _choose(fitted: FittedModel | None, free: pd.DataFrame, n: int, config: LoopConfig, seed: int) -> list[int]:
    """Pool positions (``free``'s index) of ``n`` rows of ``free`` chosen by the criterion (at random
    without a model or for the ``"random"`` criterion)."""
    if n <= 0:
        return []
    if fitted is None or config.criterion == "random":
        chosen = select(None, free, n, criterion="random", seed=seed)
    else:
        chosen = select(fitted, free, n, criterion=config.criterion, batch=config.batch, seed=seed)
    # the selection's index counts the rows of ``free``; ``free``'s own index is the pool position
    return [int(i) for i in free.index[chosen.rows.index.to_numpy()]]


def _label_round(directory: Path, config: LoopConfig, state: dict, pool: pd.DataFrame, oracle: Oracle,
                 fitted: FittedModel | None, n: int) -> None:  # fmt: skip
    """Choose ``n`` rows of ``pool`` not chosen before (at random without a model), label, commit."""
    k = state["round"]
    t0 = time.perf_counter()
    free = pool.drop(index=pool.index[state["chosen"]]) if state["chosen"] else pool
    n_audit = int(round(config.audit_fraction * n))
    audit = _choose(None, free, n_audit, config, config.seed + k + _AUDIT_SEED)
    positions = audit + _choose(fitted, free.drop(index=audit), n - n_audit, config, config.seed + k)
    rows = pool.iloc[positions]
    t1 = time.perf_counter()
    labels = _labels(oracle, rows, config.spec.data.target)
    if config.audit_fraction > 0:
        labels[AUDIT_COLUMN] = ["val"] * len(audit) + ["train"] * (len(positions) - len(audit))
    (directory / f"round_{k}").mkdir(exist_ok=True)
    atomic_write_text(directory / f"round_{k}" / "labels.csv", labels.to_csv(index=False))
    for h in state["history"]:
        if h["round"] == k:
            h.update(choose_seconds=t1 - t0, oracle_seconds=time.perf_counter() - t1)
    state["chosen"] = state["chosen"] + positions
    state["round"] = k + 1
    atomic_write_json(directory / STATE_FILE, state)


def run_loop(
    directory: str | Path,
    pool: pd.DataFrame,
    oracle: Oracle,
    config: LoopConfig,
    *,
    initial: pd.DataFrame | None = None,
    evaluate: Callable[[FittedModel], dict[str, Any]] | None = None,
    log: Callable[[str], None] | None = None,
) -> LoopResult:
    """Run (or resume) the loop of ``config`` in ``directory`` (module docstring).

    Args:
        directory: where the loop keeps its state, models and labels; an existing loop there is
            resumed (with the same ``pool``, ``initial`` and ``config``).
        pool: the candidate rows (raw inputs; other columns are carried along to the oracle).
        oracle: labels the chosen rows (:data:`Oracle`, e.g. a :class:`CommandOracle`).
        config: the :class:`LoopConfig`.
        initial: labelled rows to start from (with the target column); ``None``: a random first
            batch of ``config.initial_size`` pool rows.
        evaluate: ``evaluate(fitted) -> dict`` of numbers recorded with each fit (e.g. test scores).
        log: called with one line per step (progress).

    Returns:
        :class:`LoopResult`: the last model, the labelled rows and the fits' records
        (``round``, ``n_labelled``, ``n_usable``, ``fit_seconds``, ``warm_start``, ``evaluate``'s keys
        and, once the round's batch is labelled, ``choose_seconds`` and ``oracle_seconds``).
    """
    directory = Path(directory)
    if (initial is None or len(initial) == 0) and config.initial_size < 1:
        raise InputError("give initial labelled rows or an initial_size for a random first batch")
    if len(pool) == 0:
        raise InputError("the candidate pool is empty")
    _check_inputs(pool, initial, config.spec)
    directory.mkdir(parents=True, exist_ok=True)
    pool = pool.reset_index(drop=True)
    state = _load_state(directory, config, len(pool))
    say = log or (lambda line: None)
    fitted = None
    while True:
        labelled = _labelled(directory, initial, state["round"])
        if len(labelled) == 0:
            say(f"round {state['round']}: {config.initial_size} random rows")
            _label_round(directory, config, state, pool, oracle, None, config.initial_size)
            continue
        if state["fitted_round"] < state["round"]:
            say(f"round {state['round']}: fit on {len(labelled)} labelled rows")
            fitted = _fit_round(directory, config, state, labelled, evaluate)
        elif fitted is None:
            fitted = load_model(directory / f"round_{state['round']}" / "model")
        n = min(config.batch_size, config.max_labelled - len(labelled), len(pool) - len(state["chosen"]))
        if n <= 0:
            return LoopResult(fitted, labelled, state["history"])
        say(f"round {state['round']}: choose {n} rows ({config.criterion}) and label them")
        _label_round(directory, config, state, pool, oracle, fitted, n)
        fitted = None
