"""S3: CPU per page of link extraction, the previous ``abc_crawler/web/parser.py`` against the current one.

    .venv/bin/python bench/parser_micro.py [--baseline REV] [--pages 300] [--rounds 7]
                                           [--out bench/results/parser_micro.json]

``old`` is ``extract_links`` as it was at git revision ``--baseline`` (default
``ea428f4``: ``etree.fromstring`` with an ``HTMLParser`` then three XPath
walks), loaded with ``git show``; ``new`` is the working tree's (since
session 17 libxml2's parse with an lxml parser target and no tree, and since
session 18 the text of ``<style>`` elements read from the bytes; the tree only
for pages whose bytes cannot vouch for it). Both get the same bytes and no
HTTP charset, as the crawler calls them for a page without one.

Beside them, parse entry points alone (no link extraction), to see what the
parse itself costs with each configuration:

``parse-old``        ``etree.fromstring`` with the old parser options;
``parse-new``        the same with ``collect_ids=False`` (the new parser);
``parse-comments``   ``collect_ids=False`` keeping comments and PIs;
``parse-lxml.html``  ``lxml.html.document_fromstring``;
``walk-new``         a single ``iter("a", "area", "base", "meta")`` walk alone
                     over an already parsed tree (what a tree walk costs
                     besides the parse; ``new`` no longer builds the tree).

Pages: ``corpus`` — an even sample of ``--pages`` HTML files over all the
Debian documentation trees of ``/work/shared/corpus/README.md`` (skipped when
not installed); ``synthetic`` — pages of an ``abc-testweb generate --plain``
web. For every page the variants run back to back (order rotated page by
page), so a load change on the shared machine hits all alike; the figure is
process CPU time per page, median over ``--rounds`` rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import describe_header, write_result  # noqa: E402
from warc_micro import DEFAULT_BASELINE, corpus_files, load_baseline, synthetic_files  # noqa: E402


def _fields(p) -> tuple:
    return p.ok, p.base, p.links, p.nofollow, p.meta_nofollow


def variants(old, new) -> dict:
    from lxml import etree, html as lxml_html

    old_parser = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)
    keep_comments = etree.HTMLParser(recover=True, no_network=True, collect_ids=False)
    new_parser = new._PARSER

    def walk_new(root, _iter=new._iter_document, _get=etree._Element.get):
        for el in _iter(root, "a", "area", "base", "meta"):
            tag = el.tag
            if (tag == "a" or tag == "area") and _get(el, "href"):
                _get(el, "rel")

    return {
        "old": old.extract_links,
        "new": new.extract_links,
        "parse-old": lambda b: etree.fromstring(b, old_parser),
        "parse-new": lambda b: etree.fromstring(b, new_parser),
        "parse-comments": lambda b: etree.fromstring(b, keep_comments),
        "parse-lxml.html": lxml_html.document_fromstring,
        "walk-new": walk_new,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the previous parser.py")
    ap.add_argument("--pages", type=int, default=300, help="pages per set")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    import abc_crawler.web.parser as new
    from lxml import etree

    old = load_baseline(a.baseline, "abc_crawler/web/parser.py", "abc_crawler._parser_baseline")
    print(describe_header(f"Parser micro-benchmark: {a.baseline}:abc_crawler/web/parser.py vs working tree"))
    sets = {}
    cf = corpus_files(a.pages)
    if cf:
        sets["corpus"] = [p.read_bytes() for p in cf]
    sets["synthetic"] = [p.read_bytes() for p in synthetic_files(a.pages)]
    fns = variants(old, new)
    names = list(fns)
    result = {"baseline": a.baseline, "rounds": a.rounds, "sets": {}}
    clock = time.process_time_ns
    for set_name, bodies in sets.items():
        trees = [etree.fromstring(b, new._PARSER) for b in bodies]
        same = sum(_fields(old.extract_links(b)) == _fields(new.extract_links(b)) for b in bodies)
        runs = {n: [] for n in names}
        for rnd in range(a.rounds):
            acc = dict.fromkeys(names, 0)
            for i, body in enumerate(bodies):
                k = (i + rnd) % len(names)
                for n in names[k:] + names[:k]:
                    arg = trees[i] if n == "walk-new" else body
                    f = fns[n]
                    t0 = clock()
                    f(arg)
                    acc[n] += clock() - t0
            for n in names:
                runs[n].append(acc[n] / len(bodies) / 1000)
        med = {n: statistics.median(v) for n, v in runs.items()}
        kb = sum(map(len, bodies)) / len(bodies) / 1024
        links = sum(len(new.extract_links(b).links) for b in bodies) / len(bodies)
        row = {"pages": len(bodies), "mean_kb": round(kb, 1), "links_per_page": round(links, 1),
               "identical_results": same, "us_per_page": {n: round(v, 1) for n, v in med.items()}, "runs": runs}
        result["sets"][set_name] = row
        print(f"\n{set_name}: {len(bodies)} pages, mean {kb:.1f} KB, {links:.0f} links/page, "
              f"results identical on {same}/{len(bodies)}; CPU µs per page, median of {a.rounds} rounds")
        print(f"  extract_links  old {med['old']:8.1f}   new {med['new']:8.1f}   "
              f"-{100 * (1 - med['new'] / med['old']):.0f} %  ({med['old'] / med['new']:.2f}x)")
        for n in names[2:]:
            print(f"  {n:15s} {med[n]:8.1f}")
    path = write_result("parser_micro", result, a.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
