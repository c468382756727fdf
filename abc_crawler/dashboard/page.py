"""The dashboard page: ``assets/index.html`` with its style and script put inline.

The three files ship inside the package (``abc_crawler/dashboard/assets/``);
the page loads nothing from elsewhere: it polls ``status.json`` and draws its
charts itself, as SVG elements made by its script from the snapshot (no
charting library; see ``docs/DASHBOARD.md`` for why). The
``Content-Security-Policy`` header allows exactly the inline style and
script (by their SHA-256) and same-origin requests, nothing else.
"""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import resources

__all__ = ["Page"]


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@dataclass(frozen=True)
class Page:
    html: bytes
    csp: str

    @classmethod
    def load(cls) -> "Page":
        d = resources.files(__package__) / "assets"
        html = (d / "index.html").read_text(encoding="utf-8")
        css = (d / "dashboard.css").read_text(encoding="utf-8")
        js = (d / "dashboard.js").read_text(encoding="utf-8")
        if html.count("{{style}}") != 1 or html.count("{{script}}") != 1:
            raise ValueError("assets/index.html must hold {{style}} and {{script}} once each")
        page = html.replace("{{style}}", css).replace("{{script}}", js)
        csp = (f"default-src 'none'; style-src {_sha256(css)}; script-src {_sha256(js)}; img-src data:; "
               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        return cls(page.encode("utf-8"), csp)
