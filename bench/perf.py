"""`make perf`: how long each strategy takes to replay, as ratios to `none` measured side by side.

These machines are noisy (20-40% run to run), so absolute seconds mean little: every round
replays all strategies in a shuffled order on the same trace and the same shared token counts,
and we report the median and IQR of each strategy's time divided by `none`'s time in that round.
A line warns when a strategy's spread (std dev / mean) is 10% or more, as pyperf does.

Also measured in the same run: a replay with the shared per-message token counts vs one that
counts every message again (what sharing the counter saves).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import strategies
from bench.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.tokens import TokenCounter


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__)
    p.add_argument("--scenario", default="long")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--model", default="claude-sonnet-4-5")
    p.add_argument("--strategies", nargs="*", default=None)
    args = p.parse_args(argv)

    from traces.synthetic import generate

    trace = generate(args.scenario, seed=0)
    config = ReplayConfig(profile(args.model))
    names = args.strategies or strategies.names()
    if "none" not in names:
        names = ["none", *names]
    counter = TokenCounter()
    counting = _time(lambda: counter.counts(trace.messages))
    rng = random.Random(0)
    ratios: dict[str, list[float]] = {n: [] for n in names}
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.rounds):
        order = names[:]
        rng.shuffle(order)
        times = {n: _time(lambda n=n: replay(trace, strategies.build(n), config, counter=counter)) for n in order}
        for n in names:
            seconds[n].append(times[n])
            ratios[n].append(times[n] / times["none"])
    fresh = [_time(lambda: replay(trace, strategies.build("none"), config, counter=TokenCounter()))
             for _ in range(max(1, args.rounds // 2))]

    print(f"trace {trace.id}: {len(trace.messages)} messages, {trace.n_calls} calls, "
          f"{sum(counter.counts(trace.messages)):,} tokens; counted once in {counting:.2f} s")
    print(f"{args.rounds} rounds, shuffled order; ratio = strategy time / none time in the same round\n")
    print(f"{'strategy':32} {'median s':>9} {'ratio':>7} {'IQR':>15}  note")
    for n in sorted(names, key=lambda n: statistics.median(ratios[n])):
        r = sorted(ratios[n])
        q1, q3 = (statistics.quantiles(r, n=4)[0], statistics.quantiles(r, n=4)[2]) if len(r) > 1 else (r[0], r[0])
        s = seconds[n]
        spread = statistics.stdev(s) / statistics.mean(s) if len(s) > 1 else 0.0
        note = f"unstable: std dev {spread:.0%} of mean" if spread >= 0.10 else ""
        print(f"{n:32} {statistics.median(s):9.3f} {statistics.median(r):7.2f} [{q1:5.2f}, {q3:5.2f}]  {note}")
    shared = statistics.median(seconds["none"])
    print(f"\nnone with shared counts {shared:.3f} s vs counting afresh {statistics.median(fresh):.3f} s "
          f"(x{statistics.median(fresh) / shared:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
