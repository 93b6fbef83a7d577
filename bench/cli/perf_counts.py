"""Pre-replay counting of the ``make bench`` corpus with no count cache, a cold one and a warm one, side
by side in one process (``bench/tokens/count_cache.py``): what a second run saves before its first replay.

usage: python -m bench.cli.perf_counts [SEEDS]   (default 3, as make bench)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    from bench.cli.perf import corpus
    from bench.run.sources import trace_hash
    from bench.tokens import count_cache
    from bench.tokens.counter import TokenCounter
    traces = corpus(seeds)
    shas = [trace_hash(t) for t in traces]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COMPACTION_BENCH_CACHE"] = tmp

        def timed(fn):
            t0, w0 = time.process_time(), time.perf_counter()
            out = fn()
            return time.process_time() - t0, time.perf_counter() - w0, out

        plain = timed(lambda: [TokenCounter().counts(t.messages) for t in traces])
        def primed() -> list[bool]:
            return [count_cache.prime(TokenCounter(), s, t.messages) for s, t in zip(shas, traces, strict=True)]

        cold = timed(primed)
        warm = timed(primed)
        hashing = timed(lambda: [trace_hash(t) for t in traces])
        size = sum(p.stat().st_size for p in __import__("pathlib").Path(tmp).rglob("*.counts"))
    msgs = sum(len(t.messages) for t in traces)
    assert not any(cold[2]) and all(warm[2])
    print(f"{len(traces)} traces, {msgs:,} messages; CPU s (wall s): no cache {plain[0]:.2f} ({plain[1]:.2f}), "
          f"cold cache {cold[0]:.2f} ({cold[1]:.2f}), warm cache {warm[0]:.3f} ({warm[1]:.3f}) "
          f"-> warm is {plain[0] / max(warm[0], 1e-9):.0f}x less CPU; hashing the traces (done anyway for task keys) "
          f"{hashing[0]:.2f}; cache files {size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
