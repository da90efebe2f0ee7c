"""``sigmabnn active POOL --target T --oracle CMD --dir DIR``: an active-learning loop with a command oracle."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sigmabnn.cli import common
from sigmabnn.names import ACQUISITION_BATCH_MODES, ACQUISITION_CRITERIA, METHODS

#: The table of every labelled row the command writes into the loop's directory at the end.
LABELLED_FILE = "labelled.csv"
HELP = "active learning: fit, choose a batch from a pool, label it with a command, refit (resumable)"
DESCRIPTION = (
    "Run the active-learning loop of sigmabnn.active on the candidate table POOL: fit, choose --batch-size rows, "
    "run the --oracle command on them ('{input}' is replaced by a CSV of the chosen rows, '{output}' by the CSV "
    "it must write: the same rows with the target column), add the labels and refit from the previous networks, "
    "until --max-labelled rows are labelled. Everything is kept in --dir; the same command resumes a killed loop. "
    f"At the end DIR/{LABELLED_FILE} holds every labelled row and the last round's model is printed."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", metavar="POOL", help="candidate table (.csv, .parquet) with the input columns")
    p.add_argument("--target", required=True, metavar="COL", help="the column the oracle fills")
    p.add_argument("--features", required=True, type=common.column_list, metavar="A,B,C", help="input columns")
    p.add_argument("--oracle", required=True, metavar="CMD", help="shell command template with {input} and {output}")
    p.add_argument("--dir", required=True, metavar="DIR", help="the loop's directory (state, models, labels)")
    start = p.add_mutually_exclusive_group(required=True)
    start.add_argument("--initial", metavar="FILE", help="labelled rows to start from (with the target column)")
    start.add_argument("--initial-size", type=common.positive_int, metavar="N", help="random first batch size")
    p.add_argument("--batch-size", type=common.positive_int, required=True, metavar="N", help="rows per round")
    p.add_argument("--max-labelled", type=common.positive_int, required=True, metavar="N", help="stop here")
    p.add_argument("--criterion", choices=ACQUISITION_CRITERIA, default="epig", help="default epig")
    p.add_argument("--batch", choices=ACQUISITION_BATCH_MODES, default="greedy", help="default greedy")
    p.add_argument("--method", choices=METHODS, default="ensemble", help="fit method (default ensemble)")
    p.add_argument(  # no default here: argparse would pass a default string through the type check
        "--architecture", type=common.architecture, metavar="A", help="e.g. 5-20-20-1 (default NFEATURES-20-20-1)"
    )
    p.add_argument("--log-target", action="store_true", help="model log10 of the (positive) target")
    p.add_argument("--members", type=common.positive_int, metavar="M", help="ensemble members")
    p.add_argument("--steps", type=common.positive_int, metavar="N", help="optimiser steps (ensemble, VI)")
    p.add_argument("--chains", type=common.positive_int, default=4, metavar="C", help="MCMC chains")
    p.add_argument("--warmup", type=common.positive_int, metavar="N", help="MCMC warm-up iterations per chain")
    p.add_argument("--draws", type=common.positive_int, metavar="N", help="MCMC draws per chain")
    p.add_argument("--seed", type=common.seed, default=0, metavar="N", help="seed of the fits and random picks")
    audit = "share of every batch drawn at random and kept as the fits' validation rows (default 0.1)"
    p.add_argument("--audit-fraction", type=common.fraction, default=0.1, metavar="F", help=audit)
    cold = "refit every round from fresh initialisations, not the previous round's networks"
    p.add_argument("--no-warm-start", action="store_true", help=cold)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    pool_path = common.input_file(args.pool, "pool file")
    initial_path = None if args.initial is None else common.input_file(args.initial, "initial file")

    from sigmabnn.data.tables import read_table
    from sigmabnn.fitting.spec import build_spec
    from sigmabnn.io.atomic import atomic_write_text
    from sigmabnn.names import ENSEMBLE_METHODS
    from sigmabnn.workflows.active import CommandOracle, LoopConfig, run_loop

    options = {}
    if args.method in ENSEMBLE_METHODS and args.members is not None:
        options["num_members"] = args.members
    if args.steps is not None:
        options["num_steps"] = args.steps
    spec = build_spec(args.target, args.features, method=args.method, architecture=args.architecture or "auto",
                      log_target=args.log_target, split=(0.9, 0.1, 0.0), seed=args.seed, num_chains=args.chains,
                      num_warmup=args.warmup, num_samples=args.draws, **options)  # fmt: skip
    config = LoopConfig(spec=spec, batch_size=args.batch_size, max_labelled=args.max_labelled,
                        criterion=args.criterion, batch=args.batch, initial_size=args.initial_size or 0,
                        seed=args.seed, audit_fraction=args.audit_fraction,
                        warm_start=not args.no_warm_start)  # fmt: skip
    pool = read_table(pool_path)
    initial = None if initial_path is None else read_table(initial_path)
    oracle = CommandOracle(args.oracle, args.target, f"{args.dir}/oracle")
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    result = run_loop(args.dir, pool, oracle, config, initial=initial, log=log)
    for h in result.history:
        print(f"round {h['round']}: {h['n_labelled']} labelled, fit {h['fit_seconds']:.1f} s")
    labelled_path = Path(args.dir) / LABELLED_FILE
    atomic_write_text(labelled_path, result.labelled.to_csv(index=False))
    model_path = Path(args.dir) / f"round_{result.history[-1]['round']}" / "model"
    print(f"model: {model_path}; all {len(result.labelled)} labelled rows: {labelled_path}")
    return 0
