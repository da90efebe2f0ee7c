"""``sigmabnn demo [toy|nlo|digits]``: the built-in experiments (toy regression; the NLO surrogate; digits)."""

from __future__ import annotations

import argparse
import sys
import time

from sigmabnn.cli import common

HELP = "run a built-in experiment: toy (six 1-d functions), nlo (the chi1 chi1 surrogate) or digits (a classifier)"
DESCRIPTION = (
    "toy (the default): fit a BNN with NUTS (or variational inference, --method) to each of six noisy "
    "one-dimensional functions (Maz 2018: 50 points on [-10, 10]), predict on [-20, 20], write one PNG per function "
    "and print how often the 95 % interval contains the true function inside and outside the training domain. "
    "nlo: train the recommended surrogate of the NLO cross section p p -> chi1^0 chi1^0 on the built-in Prospino "
    "data (a heteroscedastic Student-t head, MAP pretraining, then ChEES-HMC), save the model and write its "
    "calibration report. digits: train a categorical BNN on the built-in 8x8 handwritten digits, print its test "
    "accuracy, NLL and expected calibration error, and write its report (reliability diagram, most and least "
    "certain digits)."
)

DEMOS = ("toy", "nlo", "digits")
DEFAULT_OUT = {"toy": "sigmabnn-demo", "nlo": "sigmabnn-demo-nlo", "digits": "sigmabnn-demo-digits"}
DIGITS_METHODS = ("ensemble", "nuts", "chees", "hmc", "mh", "bbb", "flipout")
TOY_NAMES = ("linear", "quadratic", "sine", "log", "reciprocal", "chirp")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default="toy", choices=DEMOS, help="which demo (default: toy)")
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="DIR",
        help="output directory (default " + ", ".join(f"./{d} for {n}" for n, d in DEFAULT_OUT.items()) + ")",
    )
    p.add_argument(
        "--functions",
        type=common.column_list,
        metavar="F,G",
        help=f"toy: run only these functions ({','.join(TOY_NAMES)})",
    )
    p.add_argument("--seed", type=common.seed, default=0, metavar="N", help="random seed (default 0)")
    p.add_argument(
        "--method",
        choices=("nuts", "bbb", "flipout", "maz", "ensemble", "chees", "hmc", "mh"),
        default=None,
        help="toy: nuts (default), bbb or flipout; maz: Maz 2018's setting (2 x 40 rbf units, BBB, 500 steps); "
        "digits: ensemble (default), nuts, chees, hmc, mh, bbb or flipout",
    )
    p.add_argument("--chains", type=common.positive_int, metavar="N", help="NUTS chains per fit (default 2)")
    p.add_argument("--warmup", type=common.positive_int, metavar="N", help="warm-up steps per chain")
    p.add_argument("--draws", type=common.positive_int, metavar="N", help="kept draws per chain")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    if args.name == "nlo":
        return run_nlo(args)
    if args.name == "digits":
        return run_digits(args)
    return run_toy(args)


def run_digits(args: argparse.Namespace) -> int:
    """``sigmabnn demo digits``: a categorical BNN on the built-in handwritten digits; test accuracy, NLL, ECE."""
    from sigmabnn.errors import InputError

    if args.functions or args.chains or args.warmup or args.draws:
        raise InputError("--functions, --chains, --warmup and --draws do not apply to the digits demo")
    method = args.method or "ensemble"
    if method not in DIGITS_METHODS:
        raise InputError(f"the digits demo trains with {', '.join(DIGITS_METHODS)}; not {method!r}")
    out = common.output_dir(args.out or DEFAULT_OUT["digits"], "output directory")

    from sigmabnn.workflows.digits import DIGITS_ARCHITECTURE
    from sigmabnn.workflows.digits import run_digits as run_workflow

    print(f"handwritten digits (8x8, built-in): categorical BNN {DIGITS_ARCHITECTURE}, {method}", flush=True)
    result = run_workflow(out, method=method, seed=args.seed, progress=not args.quiet)
    t = result.test
    print(f"test rows {t['n']}: accuracy {t['accuracy']:.4f} (error {t['error']:.4f}), NLL {t['nll']:.4f} nats, "
          f"ECE {t['ece']:.4f} ({t['ece_bins']} bins), Brier {t['brier']:.4f}")  # fmt: skip
    print(f"done in {common.format_seconds(result.seconds)}; model {result.model_path}")
    print(f"report: {result.report.markdown}")
    sys.stdout.flush()
    return 0


def run_nlo(args: argparse.Namespace) -> int:
    """``sigmabnn demo nlo``: train the chi1 chi1 surrogate on the built-in data, save it, write its report."""
    from sigmabnn.errors import InputError

    if args.functions:
        raise InputError("--functions applies to the toy demo only")
    if args.method not in (None, "nuts"):
        raise InputError("--method applies to the toy and digits demos only (the NLO demo samples with NUTS)")
    out = common.output_dir(args.out or DEFAULT_OUT["nlo"], "output directory")

    from sigmabnn.cli.evaluate import report_summary
    from sigmabnn.workflows.nlo import demo_config, run_demo

    overrides = {"num_chains": args.chains, "num_warmup": args.warmup, "num_samples": args.draws}
    config = demo_config(**{k: v for k, v in overrides.items() if v is not None})
    print(f"NLO surrogate of p p -> chi1^0 chi1^0 on the built-in Prospino data: {config.describe()}", flush=True)
    result = run_demo(args.seed, out, config, progress=not args.quiet)
    timings = result.result.report.timings
    map_seconds, sample_seconds = (None, None) if timings is None else (timings.map_seconds, timings.sample_seconds)
    print(
        f"trained in {common.format_seconds(result.result.metrics['fit_seconds'])} (MAP "
        f"{common.format_seconds(float('nan') if map_seconds is None else map_seconds)}, sampling "
        f"{common.format_seconds(float('nan') if sample_seconds is None else sample_seconds)}); "
        f"{result.result.fitted.num_networks} networks"
    )
    report_summary(result.report.metrics)
    print(f"done in {common.format_seconds(result.seconds)}; model {result.model_path}")
    print(f"calibration report: {result.report.markdown}")
    sys.stdout.flush()
    return 0


def run_toy(args: argparse.Namespace) -> int:
    """``sigmabnn demo [toy]``: the six toy functions."""
    from sigmabnn.errors import InputError

    unknown = [f for f in args.functions or () if f not in TOY_NAMES]
    if unknown:
        raise InputError(f"unknown toy function {unknown[0]!r}; choose from {', '.join(TOY_NAMES)}")
    out = common.output_dir(args.out or DEFAULT_OUT["toy"], "figure directory")
    args.method = args.method or "nuts"
    if args.method not in ("nuts", "bbb", "flipout", "maz"):
        raise InputError(f"the toy demo trains with nuts, bbb, flipout or maz; not {args.method!r}")

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
