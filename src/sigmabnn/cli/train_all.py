"""``sigmabnn train-all DATA --out DIR``: one surrogate per cross-section process, a summary table, resumable."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sigmabnn.cli import common, dask_options

HELP = "train the recommended surrogate of every process of a cross-section table (resumable)"
DESCRIPTION = (
    "Train one BNN surrogate per process (every nlo_<pdg1>_<pdg2> column of DATA, or those given with --process) "
    "with the recommended configuration (the thesis's inputs plus physics features, a heteroscedastic Student-t "
    "head, MAP pretraining, ChEES-HMC), save DIR/<target>.model and DIR/<target>.json, and write DIR/summary.csv "
    "and DIR/summary.md with the test-split metrics per process. Processes already finished in DIR are skipped, "
    "so an interrupted run resumes where it stopped. DATA 'builtin' is the built-in data set. With --dask every "
    "process is a task on a Dask cluster (DIR on a file system the workers share)."
)

BUILTIN = "builtin"


def hidden_widths(text: str) -> tuple[int, ...]:
    """argparse type: hidden-layer widths such as ``20-20``."""
    parts = text.replace(",", "-").split("-")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"hidden widths must look like 20-20, got {text!r}")
    return tuple(int(p) for p in parts)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help=f"cross-section table (.csv, .csv.gz, .parquet) or '{BUILTIN}'")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="surrogate directory (created if needed)")
    p.add_argument(
        "--process",
        action="append",
        metavar="PDG1,PDG2",
        help="train only this process (repeatable; default: every process of DATA)",
    )
    p.add_argument("--seed", type=common.seed, default=0, metavar="N", help="random seed (default 0)")
    add_config_arguments(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    dask_options.add_arguments(p, "every process's fit")


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    """Options overriding the recommended configuration (:class:`sigmabnn.workflows.nlo.NLOConfig`)."""
    g = p.add_argument_group("configuration (default: the recommended one)")
    g.add_argument("--hidden", type=hidden_widths, metavar="W1-W2", help="hidden-layer widths (default 20-20)")
    g.add_argument(
        "--map-steps", type=common.positive_int, metavar="N", help="Adam pretraining steps per stage (default 3000)"
    )
    g.add_argument(
        "--map-lbfgs-steps",
        type=common.nonnegative_int,
        metavar="N",
        help="L-BFGS iterations polishing each MAP start after Adam, per stage (default 1000; 0: none)",
    )
    g.add_argument(
        "--chains", type=common.positive_int, metavar="N", help="chains, each from its own MAP start (default 8)"
    )
    g.add_argument("--warmup", type=common.positive_int, metavar="N", help="warm-up iterations per chain")
    g.add_argument("--draws", type=common.positive_int, metavar="N", help="kept draws per chain")
    g.add_argument(
        "--max-tree-depth",
        type=common.positive_int,
        metavar="N",
        help="at most 2**N - 1 leapfrog steps per iteration (default 5)",
    )


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~sigmabnn.workflows.nlo.NLOConfig` fields given on the command line."""
    given = {
        "hidden": args.hidden,
        "map_steps": args.map_steps,
        "map_lbfgs_steps": args.map_lbfgs_steps,
        "num_chains": args.chains,
        "num_warmup": args.warmup,
        "num_samples": args.draws,
        "max_tree_depth": args.max_tree_depth,
    }
    return {k: v for k, v in given.items() if v is not None}


def run(args: argparse.Namespace) -> int:
    data_path = None if args.data == BUILTIN else common.input_file(args.data, "data file")
    out = common.writable_dir(args.out, "surrogate directory")  # train_all creates it once the request is valid

    from sigmabnn.workflows.surrogates import summary_markdown, train_all

    if data_path is None:
        from sigmabnn.datasets import load_ewino

        table = load_ewino()
    else:
        from sigmabnn.data.tables import read_table

        table = read_table(data_path)

    def show(record: dict[str, Any], skipped: bool) -> None:
        test = record["metrics"].get("test", {})
        state = "already done" if skipped else f"trained in {common.format_seconds(record['train_seconds'])}"
        r2 = test.get("r2_log")
        med = test.get("rel_err", {}).get("q0.5")
        scores = "" if r2 is None else f"; test R^2 log {r2:.4f}, median rel. error {100 * med:.2f} %"
        print(f"{record['process']:>20}  {record['label']:<12} {state}{scores}", flush=True)

    from sigmabnn.workflows.surrogates import summary_row

    with dask_options.client_for(args) as client:
        records = train_all(
            args.seed,
            table,
            out,
            processes=args.process,
            progress=not args.quiet,
            callback=show,
            client=client,
            **config_overrides(args),
        )
    print()
    sys.stdout.write(summary_markdown([summary_row(r) for r in records]))
    mixtures = [r["process"] for r in records if r.get("modes")]
    if mixtures:
        print(
            f"{len(mixtures)} of {len(records)} models are mixtures of modes (R-hat of the predictions above 1.1: "
            "their chains sit in different modes; see 'modes' in each record)"
        )
    print(f"models and summary (summary.csv, summary.md) in {out}")
    return 0
