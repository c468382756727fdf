"""Sizes and durations with units, as flags and TOML values take them.

Sizes: a number of bytes, or a number with a unit. ``K``, ``M``, ``G``, ``T``
(also ``KiB`` … ``TiB``) are powers of 1,024, as in wget's ``--quota`` and
curl's ``--max-filesize``; ``kB``, ``MB``, ``GB``, ``TB`` are powers of 1,000.
Durations: a number of seconds, or a number with ``ms``, ``s``, ``m`` (minutes),
``h`` or ``d``. Case does not matter except ``m`` against ``M`` in sizes (both
mean mega there: ``10m`` is 10 MiB, as in wget).

>>> parse_size("10M"), parse_size("1G"), parse_size("512k"), parse_size("2MB"), parse_size(4096)
(10485760, 1073741824, 524288, 2000000, 4096)
>>> parse_duration("90s"), parse_duration("2h"), parse_duration("1.5m"), parse_duration("250ms"), parse_duration(3)
(90.0, 7200.0, 90.0, 0.25, 3.0)
>>> parse_size("10 parsecs")
Traceback (most recent call last):
...
ValueError: '10 parsecs': expected bytes, or a number with K, M, G, T (1,024s) or kB, MB, GB, TB (1,000s)
>>> format_size(10 * 1024 * 1024), format_size(1_000_000_000), format_duration(37.51), format_duration(7200)
('10M', '1GB', '37.51s', '2h')
"""
from __future__ import annotations

import math
import re

__all__ = ["parse_size", "parse_duration", "format_size", "format_duration"]

_SIZE_UNITS = {"": 1, "b": 1,
               "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
               "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}
_DURATION_UNITS = {"": 1.0, "ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def _split(text, units: dict, what: str):
    if isinstance(text, bool):
        raise ValueError(f"{text!r}: expected {what}")
    if isinstance(text, (int, float)):
        return float(text), 1
    m = _NUMBER.match(str(text))
    if m is None or m.group(2).lower() not in units:
        raise ValueError(f"{text!r}: expected {what}")
    return float(m.group(1)), units[m.group(2).lower()]


def parse_size(text) -> int:
    """Bytes of ``text`` (an int, or a string such as ``"10M"``); a fraction of a byte is an error."""
    number, unit = _split(text, _SIZE_UNITS, "bytes, or a number with K, M, G, T (1,024s) or kB, MB, GB, TB (1,000s)")
    value = number * unit
    if not math.isfinite(value) or not value.is_integer():
        raise ValueError(f"{text!r}: not a whole number of bytes")
    return int(value)


def parse_duration(text) -> float:
    """Seconds of ``text`` (a number, or a string such as ``"90s"``, ``"2h"``)."""
    number, unit = _split(text, _DURATION_UNITS, "seconds, or a number with ms, s, m, h or d")
    value = number * unit
    if not math.isfinite(value):
        raise ValueError(f"{text!r}: not a finite duration")
    return value


def format_size(n: int) -> str:
    """``n`` bytes spelt exactly with the largest 1,024 unit, else the largest 1,000 unit, else bare."""
    for suffix, unit in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10),
                         ("TB", 10 ** 12), ("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if n and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def format_duration(s: float) -> str:
    """``s`` seconds as the largest whole unit (``2h``, ``90s``, ``37.51s``)."""
    for suffix, unit in (("d", 86400), ("h", 3600)):
        if s and s % unit == 0:
            return f"{int(s // unit)}{suffix}"
    if s and s >= 60 and s % 60 == 0:
        return f"{int(s // 60)}m"
    return f"{s:g}s"
