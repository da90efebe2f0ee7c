"""``sigmabnn acquire MODEL CANDIDATES --n N -o OUT``: the candidate rows to label next, best first."""

from __future__ import annotations

import argparse
import sys

from sigmabnn.cli import common
from sigmabnn.names import (
    ACQUISITION_BATCH_MODES,
    ACQUISITION_CRITERIA,
    CLASS_ACQUISITION_BATCH_MODES,
    CLASS_ACQUISITION_CRITERIA,
)

CRITERIA = tuple(dict.fromkeys((*ACQUISITION_CRITERIA, *CLASS_ACQUISITION_CRITERIA)))
BATCH_MODES = tuple(dict.fromkeys((*ACQUISITION_BATCH_MODES, *CLASS_ACQUISITION_BATCH_MODES)))

HELP = "choose the candidate points to compute next (active learning), best first"
DESCRIPTION = (
    "Score every row of CANDIDATES (.csv or .parquet, read in chunks) with an acquisition criterion of the "
    "model's draws and write the N chosen rows, all their columns unchanged, plus a 'score' column, best first. "
    "Criteria: bald (mutual information between the label and the weights; computed only for the rows whose "
    "closed-form upper bound can reach the best, and a note says for how many), variance (epistemic variance, "
    "log space for a log target), relative_std (relative epistemic std of the target), epig (information about "
    "the labels at a seeded sample of the first chunk's rows, the predictions one wants), random. The batch is "
    "chosen greedily, each pick conditioning the others' uncertainty on it (--batch top: the N best scores). "
    "A classifier's criteria: bald (H[mean_t p_t] - mean_t H[p_t] of the networks' class probabilities p_t), "
    "max_entropy (H[mean_t p_t]), variation_ratios (1 - max_k mean_t p_tk), random; its batch is drawn at "
    "random with probabilities proportional to the scores among the best rows (--batch power, its default), "
    "is the N best scores (--batch top) or, with bald, BatchBALD's greedy joint information (--batch batchbald)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("candidates", metavar="CANDIDATES", help="table of candidate points (.csv, .csv.gz, .parquet)")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output CSV, or .parquet ('-' for stdout)")
    p.add_argument("--n", required=True, type=common.positive_int, metavar="N", help="number of points to choose")
    p.add_argument(
        "--criterion",
        choices=CRITERIA,
        default=None,
        help="acquisition score (default epig for a regression model, bald for a classifier)",
    )
    p.add_argument(
        "--batch",
        choices=BATCH_MODES,
        help="greedy, top (regression; default greedy), power, top, batchbald (classifier; default power)",
    )
    p.add_argument(
        "--features",
        type=common.column_list,
        metavar="A,B,C",
        help="candidate columns holding the model's raw inputs, in the model's order (default: by name)",
    )
    p.add_argument(
        "--pool-size",
        type=common.positive_int,
        metavar="K",
        help="best rows kept for the batch step (default: the larger of 20 N and 10,000)",
    )
    p.add_argument("--chunk-rows", type=common.positive_int, default=100_000, metavar="R", help="rows read at a time")
    p.add_argument(
        "--seed",
        type=common.seed,
        default=0,
        metavar="N",
        help="seed of the random criterion, of epig's targets, of the power batch's draw and of batchbald's samples",
    )


def run(args: argparse.Namespace) -> int:
    model_path = args.model
    candidates = common.input_file(args.candidates, "candidates file")
    out = common.output_file(args.out, "output file")

    from sigmabnn.acquisition.select import default_criterion, select
    from sigmabnn.cli.predict import write_table
    from sigmabnn.data.tables import read_table_chunks
    from sigmabnn.io.model_file import load_model

    fitted = load_model(model_path)
    chunks = read_table_chunks(candidates, args.chunk_rows)
    criterion = default_criterion(fitted) if args.criterion is None else args.criterion
    chosen = select(fitted, chunks, args.n, criterion=criterion, batch=args.batch, pool_size=args.pool_size,
                    seed=args.seed, features=args.features)  # fmt: skip
    rows = chosen.rows.reset_index(drop=True)
    if chosen.num_scored < chosen.num_candidates:
        print(
            f"sigmabnn acquire: note: {criterion} computed for {chosen.num_scored:,} of {chosen.num_candidates:,} "
            "candidates; the others' upper bound could not reach the best",
            file=sys.stderr,
        )
    if len(rows) < args.n:
        print(
            f"sigmabnn acquire: note: only {chosen.num_candidates} candidate rows for --n {args.n}: "
            f"all {len(rows)} are written",
            file=sys.stderr,
        )
    write_table(rows, out)
    return 0
