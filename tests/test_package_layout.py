"""A dotted name means one thing: a package's submodule never shares its name with a function of the package.

Python binds every imported submodule as an attribute of its package, so a submodule `load.py` beside a function
`load` makes `rexrank.data.load` the function or the module depending on what was imported last, and
`import rexrank.data.load as m` or `monkeypatch.setattr("rexrank.data.load.X", ...)` reach the wrong object.
rexrank.data once hid this by swapping its module class; its submodules are now named apart (issue 29 point 3).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import types

import rexrank


def test_data_functions_and_modules_are_named_apart():
    import rexrank.data
    import rexrank.data.loading as loading
    import rexrank.data.verification as verification

    assert isinstance(loading, types.ModuleType) and loading.__name__ == "rexrank.data.loading"
    assert isinstance(verification, types.ModuleType) and verification.__name__ == "rexrank.data.verification"
    assert rexrank.data.load is loading.load  # still the function after its module was imported
    assert inspect.isfunction(rexrank.data.verify)
    assert type(sys.modules["rexrank.data"]) is types.ModuleType  # an ordinary package, no replaced class


def _packages():
    yield rexrank
    for info in pkgutil.walk_packages(rexrank.__path__, "rexrank."):
        if info.ispkg:
            yield importlib.import_module(info.name)


def test_no_submodule_shares_a_name_with_a_public_name_of_its_package():
    """Every package, so a new clash fails here: a public name (its __all__) that is also a submodule's name must
    be that submodule (as `rexrank.parallel` is), never a function or class the submodule would shadow."""
    clashes = []
    for package in _packages():
        for info in pkgutil.iter_modules(package.__path__):
            if info.name not in getattr(package, "__all__", ()):
                continue
            submodule = importlib.import_module(f"{package.__name__}.{info.name}")
            if getattr(package, info.name) is not submodule:
                clashes.append(f"{package.__name__}.{info.name}")
    assert not clashes, f"submodules named like a public function or class of their package: {clashes}"
