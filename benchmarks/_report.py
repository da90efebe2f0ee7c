"""What every benchmark result records about the machine, and how results are written (JSON + Markdown)."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import jax


def machine(load_start: tuple[float, ...], **versions: str) -> dict[str, Any]:
    """Platform, cores, Python/JAX (and the given library) versions, load average at start and now."""
    return {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        **versions,
        "load_average_1_5_15_at_start": [round(v, 2) for v in load_start],
        "load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()],
    }


def write(path: Path, out: dict[str, Any], markdown: str) -> None:
    """``out`` as JSON at ``path`` and ``markdown`` beside it (``.md``), each written then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, text in ((path, json.dumps(out, indent=2) + "\n"), (path.with_suffix(".md"), markdown)):
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(text)
        tmp.replace(target)
    print(f"wrote {path} and {path.with_suffix('.md')}")
