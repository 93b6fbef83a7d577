"""o200k_base offline: tiktoken encodes with the ranks bundled in bpe-openai, hash-checked first."""

from __future__ import annotations

import gzip

import pytest

from bench.tokens.counter import Tokenizer, TokenizerDataError, bundled_o200k, o200k_spec

# Token ids published as test vectors for tiktoken-compatible encoders (cl100k_base / o200k_base).
VECTORS = {
    "hello world": ([15339, 1917], [24912, 2375]),
    " 日本語とEnglish 12345!\n": ([76502, 22656, 45918, 252, 19732, 23392, 220, 4513, 1774, 4999],
                                  [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175]),
    "a\n\n": ([64, 271], [64, 279]),
}


def test_o200k_encodes_known_vectors_offline_and_differs_from_cl100k() -> None:
    o200k, cl100k = Tokenizer("o200k_base"), Tokenizer("cl100k_base")
    for text, (cl_ids, o_ids) in VECTORS.items():
        assert cl100k._enc.encode_ordinary(text) == cl_ids, text
        assert o200k._enc.encode_ordinary(text) == o_ids, text
    assert o200k.count("hello world") == cl100k.count("hello world") == 2
    japanese = " 日本語とEnglish 12345!\n"
    assert (o200k.count(japanese), cl100k.count(japanese)) == (8, 10)  # o200k's larger vocabulary
    assert o200k.count_many(list(VECTORS)) == [len(o) for _, o in VECTORS.values()]


def test_the_bundled_file_passes_tiktokens_own_hash_and_spec() -> None:
    spec = o200k_spec()
    assert spec["name"] == "o200k_base" and len(spec["mergeable_ranks"]) == 199_998
    assert spec["special_tokens"]["<|endoftext|>"] == 199_999


def test_a_corrupted_or_truncated_ranks_file_is_refused(tmp_path) -> None:
    data = gzip.decompress(bundled_o200k().read_bytes())
    corrupted = tmp_path / "o200k_base.tiktoken.gz"
    corrupted.write_bytes(gzip.compress(data.replace(b" 0\n", b" 1\n", 1)))
    with pytest.raises(TokenizerDataError, match="sha256 [0-9a-f]{64} is not the [0-9a-f]{64} tiktoken expects"):
        o200k_spec(corrupted)
    truncated = tmp_path / "truncated.gz"
    truncated.write_bytes(gzip.compress(data)[:1000])
    with pytest.raises(TokenizerDataError, match="not a readable gzip file"):
        o200k_spec(truncated)
