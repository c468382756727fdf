"""Plain data on disk and on the wire, with no way to run code when read (issue 31: checkpoints and
the journal were pickle streams, so a session directory from elsewhere ran code when resumed).

A value is ``None``, a bool, an int, a float, a str, bytes, a list or tuple (read back as a
list), a dict (keys of those scalar types), a NumPy array of a numeric or bool dtype, or a NumPy
scalar (read back as the Python number). It is written with MessagePack (``msgpack``, the
maintained C implementation; arrays as an extension type holding dtype, shape and the raw bytes)
after a magic header and a format version; reading builds only those types, whatever the bytes
say, and refuses anything else with :class:`PlainDataError` naming what it met.

>>> import numpy as np
>>> data = dumps({"n": 3, 7: [b"x", None, 1.5], "a": np.arange(4, dtype=np.int16)})
>>> back = loads(data)
>>> back["n"], back[7], back["a"].tolist(), back["a"].dtype.name
(3, [b'x', None, 1.5], [0, 1, 2, 3], 'int16')
>>> loads(b"\\x80\\x05junk")
Traceback (most recent call last):
...
abc_crawler.store.plaindata.PlainDataError: not an ABC plain-data record (it starts b'\\x80\\x05junk'): a pickle or another format; refused, nothing of it was run
"""
from __future__ import annotations

import json

import msgpack
import numpy as np

__all__ = ["dumps", "loads", "PlainDataError", "MAGIC"]

#: the first bytes of every record (a pickle starts with 0x80, JSON with "{"): the kind and version
MAGIC = b"ABCPD1\n"
_ARRAY = 1                       # extension type code of a NumPy array
_KINDS = frozenset("biufc")      # bool, signed, unsigned, float, complex: no object or void dtypes


class PlainDataError(ValueError):
    """Bytes that are not a plain-data record of this format."""


def _default(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _KINDS:
            raise TypeError(f"plain data: an array of dtype {obj.dtype} cannot be written")
        a = np.ascontiguousarray(obj)
        head = json.dumps({"dtype": a.dtype.str, "shape": list(a.shape)}).encode()
        return msgpack.ExtType(_ARRAY, len(head).to_bytes(4, "little") + head + a.tobytes())
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"plain data: a {type(obj).__name__} cannot be written")


def _ext(code: int, data: bytes):
    if code != _ARRAY:
        raise PlainDataError(f"unknown extension type {code} in a plain-data record")
    n = int.from_bytes(data[:4], "little")
    try:
        head = json.loads(data[4:4 + n])
        dt = np.dtype(head["dtype"])
        shape = tuple(int(x) for x in head["shape"])
    except (ValueError, KeyError, TypeError) as exc:
        raise PlainDataError(f"a bad array header in a plain-data record ({exc})") from None
    if dt.kind not in _KINDS or dt.hasobject:
        raise PlainDataError(f"an array of dtype {dt} in a plain-data record")
    body = data[4 + n:]
    if len(body) != dt.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise PlainDataError("an array's bytes do not match its dtype and shape")
    return np.frombuffer(body, dtype=dt).reshape(shape).copy()


def dumps(obj) -> bytes:
    """One plain-data record of ``obj``."""
    return MAGIC + msgpack.packb(obj, default=_default, use_bin_type=True, strict_types=False)


def loads(data: bytes):
    """The value of a record written by :func:`dumps`; :class:`PlainDataError` for anything else."""
    if not data.startswith(MAGIC):
        raise PlainDataError(f"not an ABC plain-data record (it starts {bytes(data[:8])!r}): a pickle or another "
                             "format; refused, nothing of it was run")
    try:
        return msgpack.unpackb(memoryview(data)[len(MAGIC):], raw=False, strict_map_key=False, ext_hook=_ext,
                               use_list=True)
    except PlainDataError:
        raise
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError) as exc:
        raise PlainDataError(f"a damaged plain-data record ({type(exc).__name__}: {exc})") from None
