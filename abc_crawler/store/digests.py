"""Base32 of SHA-1 digests, as WARC records, CDXJ lines and the crawl log write them (``sha1:BASE32``).

:func:`b32_sha1` is compiled (:mod:`abc_crawler.store._warcrec`); :func:`b32_sha1_reference` is its
Python, kept as the reference ``tests/test_warcrec.py`` holds it equal to.
"""
from __future__ import annotations

import base64

__all__ = ["b32_sha1", "b32_sha1_reference"]

_B32_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_MAP = bytes(_B32_ALPHABET[i & 31] for i in range(256))


def _spread_steps() -> list[tuple[int, int, int]]:
    """Mask-and-shift steps moving the 32 five-bit groups of a 160-bit int into 32 bytes.

    Step k halves the chunks: each chunk of ``c`` bits in a slot of ``s`` bits
    becomes two chunks of ``c/2`` bits in slots of ``s/2`` bits (160 in 256 ->
    80 in 128 -> ... -> 5 in 8).
    """
    steps = []
    slot, chunk = 256, 160
    while chunk > 5:
        half, nslot = chunk // 2, slot // 2
        lo = hi = 0
        for k in range(256 // slot):
            lo |= ((1 << half) - 1) << (k * slot)
            hi |= ((1 << half) - 1) << (k * slot + half)
        steps.append((lo, hi, nslot - half))
        slot, chunk = nslot, half
    return steps


(_L1, _H1, _S1), (_L2, _H2, _S2), (_L3, _H3, _S3), (_L4, _H4, _S4), (_L5, _H5, _S5) = _spread_steps()


def b32_sha1_reference(digest: bytes, _from=int.from_bytes, _map=_B32_MAP) -> str:
    """``base64.b32encode(digest).decode()`` for a 20-byte digest (other lengths: the stdlib).
    :func:`b32_sha1` is this compiled (:mod:`abc_crawler.store._warcrec`)."""
    if len(digest) != 20:
        return base64.b32encode(digest).decode("ascii")
    x = _from(digest, "big")
    x = (x & _L1) | ((x & _H1) << _S1)
    x = (x & _L2) | ((x & _H2) << _S2)
    x = (x & _L3) | ((x & _H3) << _S3)
    x = (x & _L4) | ((x & _H4) << _S4)
    x = (x & _L5) | ((x & _H5) << _S5)
    return x.to_bytes(32, "big").translate(_map).decode("ascii")


try:                                    # the compiled twin (built with the kernels by setup.py)
    from ._warcrec import b32_sha1, bind_b32
except ImportError:                     # pragma: no cover - an install without its extensions
    b32_sha1 = b32_sha1_reference
else:
    bind_b32(b32_sha1_reference)
