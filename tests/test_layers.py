"""The house's one rule: data flows one way through the stages, so no module imports a later stage and
no import circle exists anywhere (imports inside functions included: they are circles all the same,
only deferred).

The order is the pipeline's (DESIGN in the docs): a trace is counted (tokens), priced and windowed
(cost), summarized on request (summarizers), handed to a strategy through its API (context), managed
by the strategy (strategies), replayed call by call (replay), scored (scoring), decided on (decide);
a run orchestrates all of them over many traces and ends with the verdict (run), a report renders a
finished run (reports) and the command line sits on top (cli).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("bench", "strategies", "traces", "reports", "compaction_bench")
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("version", ("bench", "bench._native")),  # bench/__init__.py: the version string, and the compiled build's loader
    ("traces", ("traces",)),
    ("tokens", ("bench.tokens",)),
    ("cost", ("bench.cost",)),
    ("summarizers", ("bench.summarizers",)),
    ("context", ("bench.context",)),
    ("strategies", ("strategies",)),
    ("replay", ("bench.replay",)),
    ("scoring", ("bench.scoring",)),
    ("decide", ("bench.decide",)),
    ("run", ("bench.run",)),
    ("reports", ("reports",)),
    ("cli", ("bench.cli", "bench.__main__", "compaction_bench")),
)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = f.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = f
    return out


MODULES = _modules()


def stage_of(module: str) -> int:
    """The index in STAGES of the longest stage prefix naming ``module``."""
    best, length = -1, -1
    for i, (_, prefixes) in enumerate(STAGES):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > length:
                best, length = i, len(p)
    return best


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """Every module of ours that ``module`` imports, wherever the import statement is; importing
    ``a.b.c`` also runs the ``__init__`` of ``a.b`` and ``a`` (unless ``module`` lives in them)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            found = _resolve(t)
            while found:
                if found != module and not module.startswith(found + "."):
                    out.add(found)
                found = found.rpartition(".")[0] or None
                found = found if found in MODULES else None
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_has_a_stage():
    flat = [m for m in MODULES if stage_of(m) < 0 or (
        m.count(".") == 1 and m.startswith("bench.") and m not in ("bench.__main__", "bench._native")
        and MODULES[m].name != "__init__.py")]
    assert not flat, f"modules outside the stage packages: {sorted(flat)}"


def test_no_import_runs_back_up_the_stages():
    back = sorted(f"{m} ({STAGES[stage_of(m)][0]}) imports {t} ({STAGES[stage_of(t)][0]})"
                  for m, targets in GRAPH.items() for t in targets if stage_of(t) > stage_of(m))
    assert not back, "\n".join(back)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter
                counter += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def test_no_import_circles():
    assert not _cycles(GRAPH), _cycles(GRAPH)


def test_strategies_import_only_the_strategy_api():
    """A strategy sees the harness through bench.context alone (DESIGN: the strategy API)."""
    reach = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() if m.startswith("strategies")
                   for t in targets if t.startswith("bench.") and not t.startswith("bench.context"))
    assert not reach, "\n".join(reach)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_circle_finder_finds_circles(graph, expected):
    assert _cycles(graph) == expected


def test_the_stage_rule_sees_a_lazy_import_back_up():
    assert "bench.decide.verdict" in GRAPH["bench.run.runner"]  # run may use decide ...
    assert stage_of("bench.run.runner") > stage_of("bench.decide.verdict")  # ... as it comes later
