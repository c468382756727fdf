"""``report.html``: the Markdown report as one self-contained HTML page (``abc-report --html``).

The page is ``report.md`` turned into HTML (Python-Markdown with its
``tables`` extension), so it holds exactly the Markdown report's tables and
text; each plot that ``report.md`` names as a PNG file is put inline as its
SVG drawing in a ``data:`` URI. The file loads nothing else: it opens from
disk, and its ``Content-Security-Policy`` allows only inline styles and
``data:`` images. HTML in the report's text (a session path, a note) is
shown as text, never interpreted.

Examples
--------
>>> page = render_html("# T\\n\\n| a | b |\\n| --- | ---: |\\n| 1 | <x> |\\n\\n![p](p.png)\\n",
...                    {"p.png": b"<svg xmlns='http://www.w3.org/2000/svg'/>"}, "T")
>>> "<table>" in page, "&lt;x&gt;" in page, 'src="data:image/svg+xml;base64,' in page
(True, True, True)
"""
from __future__ import annotations

import base64
import re
from html import escape

__all__ = ["render_html", "CSP"]

#: what the report may load: nothing but its own inline style and data: images
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_STYLE = """
body { font-family: sans-serif; max-width: 1200px; margin: 24px auto; padding: 0 16px; color: #222; line-height: 1.4; }
h1 { font-size: 24px; } h2 { font-size: 20px; margin-top: 28px; } h3 { font-size: 16px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f0f2f5; }
td { font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0 20px; }
blockquote { color: #555; border-left: 3px solid #ccc; margin: 8px 0; padding: 2px 10px; }
code { background: #f4f4f4; padding: 0 3px; }
"""


def _converter():
    import markdown

    md = markdown.Markdown(extensions=["tables"], output_format="html")
    # raw HTML in the Markdown is shown as text (report text holds paths and notes from the session)
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return md


def render_html(markdown_text: str, svgs: dict[str, bytes], title: str) -> str:
    """The HTML page of ``markdown_text``; every image it names must be a key of ``svgs``.

    Raises ValueError when the Markdown names an image that has no SVG (the
    page would show a broken image).
    """
    body = _converter().convert(markdown_text)
    missing: list[str] = []

    def inline(m: re.Match) -> str:
        src = m.group(2)
        svg = svgs.get(src)
        if svg is None:
            missing.append(src)
            return m.group(0)
        return f'{m.group(1)}data:image/svg+xml;base64,{base64.b64encode(svg).decode()}{m.group(3)}'

    body = re.sub(r'(<img [^>]*src=")([^"]+)(")', inline, body)
    if missing:
        raise ValueError(f"report.html: no SVG for the plot(s) {', '.join(missing)}")
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            f"{body}\n</body>\n</html>\n")
