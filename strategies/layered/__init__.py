"""The five-layer escalating defense (``five-layer``; Claude Code's configuration of it: strategies/claude_code/).

Layers, cheapest first; each runs at most once per call and only if the one before left the
context over its own threshold: L1 persist large tool results to disk (a pointer stays), L2
microcompact (no LLM), L3 auto-compact (LLM summary), L4 reactive compact on a 413, with a
circuit breaker, and L5 context collapse: a read-time view of what is sent, the stored history
unchanged. L5 is armed by a failed L4 only, so it never pre-empts the layers before it.

Modules: ``five_layer`` (the strategy, ``FiveLayer``: the thresholds, L3 and L4), one per other layer
(``persist`` L1, ``microcompact`` L2, ``collapse`` L5), and ``_common`` (the texts Claude Code's
configuration shares: the summary prompt, the cleared marker). Sources in ``FiveLayer``'s docstring
(Claude Code services/compact/*).
"""
