"""Test support: the ``/status.json`` schema as docs/DASHBOARD.md documents it, and a checker."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "DASHBOARD.md"


def documented_schema(text: str | None = None) -> dict[str, str]:
    """key path → type, from the table under the ``/status.json`` heading of docs/DASHBOARD.md."""
    text = DOC.read_text() if text is None else text
    section = text.split("## `/status.json`", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"\| `([^`]+)` \| ([^|]+(?:\\\|[^|]+)*) \|", line)
        if m:
            out[m.group(1)] = m.group(2).strip().replace("\\|", "|").replace("\\<", "<").replace("\\>", ">")
    return out


def _type_ok(v, t: str) -> bool:
    for alt in t.split("|"):
        alt = alt.strip()
        if alt == "null" and v is None:
            return True
        if alt == "int" and isinstance(v, int) and not isinstance(v, bool):
            return True
        if alt == "number" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return True
        if alt == "str" and isinstance(v, str):
            return True
        if alt == "object" and isinstance(v, dict):
            return True
        if alt == "list" and isinstance(v, list):
            return True
        m = re.fullmatch(r"(list|map)<(int|number)>", alt)
        if m:
            items = v if m.group(1) == "list" and isinstance(v, list) else (
                v.values() if m.group(1) == "map" and isinstance(v, dict) else None)
            if items is not None and all(_type_ok(x, m.group(2)) for x in items):
                return True
    return False


def schema_problems(obj: dict, schema: dict[str, str], prefix: str = "") -> list[str]:
    """What in ``obj`` disagrees with ``schema``: undocumented keys, missing keys, wrong types."""
    bad = []
    expected = {k[len(prefix):] for k in schema if k.startswith(prefix) and "." not in k[len(prefix):]}
    optional = {"se", "rse"} if prefix == "graph.figures[]." and obj.get("kind") != "estimate" else set()
    bad += [f"{prefix}{k}: missing" for k in sorted(expected - set(obj) - optional)]
    for k, v in obj.items():
        path = prefix + k
        t = schema.get(path)
        if t is None:
            bad.append(f"{path}: not documented")
            continue
        if not _type_ok(v, t):
            bad.append(f"{path}: {v!r:.60} is not {t}")
            continue
        kind = t.split("|")[0]
        if kind == "object" and isinstance(v, dict):
            bad += schema_problems(v, schema, path + ".")
        elif kind == "list" and isinstance(v, list):
            for item in v:
                if not isinstance(item, dict):
                    bad.append(f"{path}[]: {item!r:.40} is not an object")
                else:
                    bad += schema_problems(item, schema, path + "[].")
    return bad
