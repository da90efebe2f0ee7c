"""The ``sigmabnn`` command: argument parsing and the subcommand registry.

Every subcommand lives in its own module of :mod:`sigmabnn.cli` and provides

- ``HELP``: one line for ``sigmabnn --help``;
- ``add_arguments(parser)``: its options (argparse only);
- ``run(args) -> int``: parse-level glue that calls the public API and writes
  results; heavy imports (JAX, pandas) happen inside ``run``.

So ``sigmabnn --help`` and ``sigmabnn --version`` never import JAX. Bad input
(:class:`sigmabnn.errors.InputError`, or an ``OSError`` on a path) becomes one
line on stderr and exit code 2; any other exception is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from sigmabnn._version import __version__

PROG = "sigmabnn"

#: Subcommand name -> module. Adding a command = adding one module and one line here.
COMMANDS: dict[str, str] = {
    "train": "sigmabnn.cli.train",
    "predict": "sigmabnn.cli.predict",
    "evaluate": "sigmabnn.cli.evaluate",
    "diagnose": "sigmabnn.cli.diagnose",
    "info": "sigmabnn.cli.info",
    "demo": "sigmabnn.cli.demo",
    "train-all": "sigmabnn.cli.train_all",
    "xsec": "sigmabnn.cli.xsec",
    "recalibrate": "sigmabnn.cli.recalibrate",
    "acquire": "sigmabnn.cli.acquire",
    "active": "sigmabnn.cli.active",
}

EXIT_OK = 0
EXIT_INPUT = 2  # bad input (also argparse's exit code for bad arguments)
EXIT_INTERRUPTED = 130


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2, like every other bad input
    (argparse prints its usage first; here ``--help`` is named instead). Subcommand parsers are of the same
    class (``add_subparsers`` makes them of its parser's type)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {_one_line(message)} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (imports only the light command modules)."""
    parser = OneLineErrorParser(
        prog=PROG,
        description="Bayesian neural network surrogates with calibrated error bars.",
        epilog=f"Run '{PROG} COMMAND --help' for the options of one command; '{PROG} demo' for a first run.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP))
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _parser=p)
    return parser


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _describe_os_error(err: OSError) -> str:
    if err.filename is not None and err.strerror:
        return f"{err.strerror}: {err.filename}"
    return str(err)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the subcommand they were given to, not by the top-level parser
        args._parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from sigmabnn.compile_cache import enable_for_process
    from sigmabnn.errors import InputError

    enable_for_process()  # compiled code cached on disk for the next run (sigmabnn.compile_cache)
    try:
        code = args._run(args)
    except BrokenPipeError:
        # The reader of our stdout went away (``sigmabnn predict ... -o - | head``): stop quietly.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except InputError as err:
        print(f"{PROG} {args.command}: error: {_one_line(err)}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:
        print(f"{PROG} {args.command}: error: {_one_line(_describe_os_error(err))}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if code is None else int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
