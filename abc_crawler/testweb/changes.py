"""Change pages of a generated web on disk, and what a correct crawl then finds (for re-crawls).

``change_pages(web_dir, n, seed)`` picks ``n`` ordinary HTML pages (status 200, served from a
file, with followable links), and rewrites each file: a paragraph with one more link — to another
HTML page of the web, absolute so ``<base href>`` cannot move it — goes before ``</body>``, so
the bytes (and the strong ETag the embedded server derives from them) change and the graph gains
an edge. The manifest's ``pages`` and ``expected`` are updated and written back (the truth of the
changed web); the changed URLs are returned and listed in the manifest as ``changed``.

A server that already runs keeps the bodies it cached: serve the web anew after a change.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from .canonical import split_url
from .expected import compute_expected

__all__ = ["change_pages"]


def change_pages(web_dir, n: int, seed: int = 0) -> list[str]:
    """Change ``n`` pages of the generated web in ``web_dir``; returns their URLs (sorted)."""
    web = Path(web_dir)
    manifest = json.loads((web / "manifest.json").read_text())
    routes = json.loads((web / "routes.json").read_text())["hosts"]
    pages = manifest["pages"]
    requested = set(manifest["expected"]["requested"])
    nodes = sorted(manifest["expected"]["nodes"])

    def route(url: str) -> dict | None:
        _, net, target = split_url(url)
        return routes.get(net.split(":")[0], {}).get(target)

    candidates = sorted(u for u in nodes if u in requested and pages[u]["links"]
                        and (route(u) or {}).get("file"))
    if n > len(candidates):
        raise ValueError(f"only {len(candidates)} pages can be changed, {n} asked")
    rng = random.Random(seed)
    changed = sorted(rng.sample(candidates, n))
    for u in changed:
        links = pages[u]["links"]
        target = rng.choice([v for v in nodes if v != u and v not in links] or nodes)
        f = web / "sites" / split_url(u)[1].split(":")[0] / route(u)["file"]
        body = f.read_bytes()
        para = f'<p class="changed">changed (seed {seed}): <a href="{target}">one more link</a></p>\n'.encode()
        cut = body.rfind(b"</body>")
        f.write_bytes(body[:cut] + para + body[cut:] if cut >= 0 else body + para)
        if target not in links:
            links.append(target)
        pages[u]["bytes"] = f.stat().st_size
    robots = {net: info["robots_txt"] for net, info in manifest["robots"].items()}
    hostile = [h for h in manifest.get("hostile_hosts", [])]
    expected = compute_expected(pages, manifest["seeds"], manifest["hosts"], robots, hostile_hosts=hostile)
    manifest["expected"] = {**manifest["expected"], **expected}
    manifest["changed"] = sorted(set(manifest.get("changed", [])) | set(changed))
    (web / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return changed
