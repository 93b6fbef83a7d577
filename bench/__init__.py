"""compaction-bench: replay agent sessions through real agents' compaction strategies and score them.

The data flows one way: trace → replay → records → metrics → report. Heavy modules are imported
where they are used, so ``import bench`` stays cheap.
"""

__version__ = "0.1.0"

from bench import _native  # noqa: E402 (the compiled modules, when built, before any is imported)

_native.install()


def lazy_face(package: str, modules: dict[str, tuple[str, ...]]):
    """A stage package's face: its public names, each imported from its module on first use, so that
    importing one module of a stage does not import the others (and their heavy libraries). Returns the
    module's ``__getattr__`` and ``__all__``."""
    from importlib import import_module

    home = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str):
        if name in home:
            return getattr(import_module(f"{package}.{home[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__, sorted(home)
