"""``sigmabnn demo [toy]``: the built-in toy regression experiment, figures and coverage."""

from __future__ import annotations

import argparse
import sys
import time

from sigmabnn.cli import common

HELP = "run the built-in toy experiment (six 1-d functions, figures and coverage)"
DESCRIPTION = (
    "Fit a BNN with NUTS (or variational inference, --method) to each of six noisy one-dimensional functions "
    "(Maz 2018: 50 points on [-10, 10]), "
    "predict on [-20, 20], write one PNG per function and print how often the 95 % interval contains the true "
    "function inside and outside the training domain."
)

DEMOS = ("toy",)
TOY_NAMES = ("linear", "quadratic", "sine", "log", "reciprocal", "chirp")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default="toy", choices=DEMOS, help="which demo (default: toy)")
    p.add_argument(
        "--out",
        "-o",
        default="sigmabnn-demo",
        metavar="DIR",
        help="directory for the figures (default ./sigmabnn-demo)",
    )
    p.add_argument(
        "--functions",
        type=common.column_list,
        metavar="F,G",
        help=f"run only these functions ({','.join(TOY_NAMES)})",
    )
    p.add_argument("--seed", type=common.nonnegative_int, default=0, metavar="N", help="random seed (default 0)")
    p.add_argument(
        "--method",
        choices=("nuts", "bbb", "flipout", "maz"),
        default="nuts",
        help="nuts (default), bbb or flipout; maz: Maz 2018's setting (2 x 40 rbf units, BBB, 500 steps)",
    )
    p.add_argument("--chains", type=common.positive_int, metavar="N", help="NUTS chains per function (default 2)")
    p.add_argument("--warmup", type=common.positive_int, metavar="N", help="warm-up steps per chain")
    p.add_argument("--draws", type=common.positive_int, metavar="N", help="kept draws per chain")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from sigmabnn.errors import InputError

    unknown = [f for f in args.functions or () if f not in TOY_NAMES]
    if unknown:
        raise InputError(f"unknown toy function {unknown[0]!r}; choose from {', '.join(TOY_NAMES)}")
    out = common.output_dir(args.out, "figure directory")

    import jax

    from sigmabnn.workflows.toy import MAZ_SETTINGS, ToySettings, run_toy

    overrides = {"num_chains": args.chains, "num_warmup": args.warmup, "num_samples": args.draws}
    if args.method == "maz":
        settings = MAZ_SETTINGS
    else:
        settings = ToySettings(method=args.method)._replace(**{k: v for k, v in overrides.items() if v is not None})
    if settings.method == "nuts":
        how = f"NUTS {settings.num_chains} chains x ({settings.num_warmup} warm-up + {settings.num_samples} draws)"
    else:
        how = f"{settings.method} {settings.num_steps} steps, M = {settings.num_mc_samples}"
    print(
        f"toy regression: {settings.num_points} noisy points on [{settings.domain[0]:g}, {settings.domain[1]:g}], "
        f"BNN {settings.architecture} {settings.activation}, {how}; predicting on "
        f"[{settings.grid[0]:g}, {settings.grid[1]:g}]"
    )
    level = f"{settings.level:.0%}"
    header = f"{'function':<12}{'in-domain':>11}{'out-of-domain':>15}{'rmse':>8}{'accept':>8}{'diverg.':>9}{'time':>13}"
    print(f"coverage of the true function by the {level} predictive interval:")
    print(header, flush=True)

    def show(r) -> None:
        accept = "-" if r.acceptance_rate is None else f"{r.acceptance_rate:.2f}"
        diverg = "-" if r.num_divergent is None else str(r.num_divergent)
        print(
            f"{r.name:<12}{r.coverage_in_domain:>11.2f}{r.coverage_out_of_domain:>15.2f}{r.rmse_in_domain:>8.3f}"
            f"{accept:>8}{diverg:>9}{common.format_seconds(r.seconds):>13}",
            flush=True,
        )

    start = time.perf_counter()
    results = run_toy(
        jax.random.key(args.seed),
        out,
        functions=args.functions,
        settings=settings,
        progress=not args.quiet,
        callback=show,
    )
    print(f"done in {common.format_seconds(time.perf_counter() - start)}; figures:")
    for r in results:
        print(f"  {r.figure}")
    sys.stdout.flush()
    return 0
