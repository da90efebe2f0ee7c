"""The lazily loaded public API: every name resolves and none shadows a submodule."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import sigmabnn


def test_every_export_resolves():
    for name in sigmabnn.__all__:
        assert getattr(sigmabnn, name) is not None


def test_no_export_shadows_a_submodule():
    submodules = {m.name for m in pkgutil.iter_modules(sigmabnn.__path__)}
    assert not submodules & set(sigmabnn.__all__)


def test_submodule_import_is_not_shadowed_in_a_fresh_process():
    code = (
        "from sigmabnn import predict as m; import types; "
        "assert isinstance(m, types.ModuleType), type(m); "
        "import sigmabnn; sigmabnn.fit; from sigmabnn import evaluate as e; assert isinstance(e, types.ModuleType)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
