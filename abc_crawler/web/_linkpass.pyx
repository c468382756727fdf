# cython: language_level=3, boundscheck=False, wraparound=False
"""A page's references in one compiled pass (issue 37: the per-response path).

Each function is the compiled twin of Python code that stays as its reference
(``tests/test_linkpass.py`` holds each pair equal):

- :func:`join_url` -- ``ada_url.join_url``: the WHATWG join of a reference with its base, by
  calling ada's C functions straight (their addresses are taken from ``ada_url``'s own cffi
  module by :func:`bind_ada`), without the Python wrapper around each call;
- :func:`canonicalize` -- ``abc_crawler.web.urls.canonicalize_reference`` (its error class, its
  query normalization and ``host_of`` are given by :func:`bind_urls`);
- :func:`trap_reason` -- ``abc_crawler.sched.limits.trap_reason``, whose Python runs only for a
  path with more segments than a limit;
- :func:`classify` -- ``LinkClassifier.classify_reference``: one reference's decision;
- :func:`link_pass` -- the loop of :meth:`abc_crawler.crawl.links.LinkClassifier.targets`: each
  reference's decision-cache key, its lookup, the distinct targets in page order, the reasons of
  the others counted. A reference not in the cache is decided by the ``decide`` it is given (a
  closure over ``LinkClassifier.classify``) and its decision cached, exactly as the Python loop does
  (``LinkClassifier.targets_reference``; ``tests/test_linkpass.py`` holds the two equal).
"""
from libc.stdint cimport uintptr_t
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE


cdef extern from *:
    """
    typedef struct { const char *data; size_t length; } abc_ada_string;
    typedef void *(*abc_ada_parse_with_base)(const char *, size_t, const char *, size_t);
    typedef unsigned char (*abc_ada_is_valid)(void *);
    typedef abc_ada_string (*abc_ada_get_href)(void *);
    typedef void (*abc_ada_free)(void *);
    """
    ctypedef struct abc_ada_string:
        const char *data
        size_t length
    ctypedef void *(*abc_ada_parse_with_base)(const char *, size_t, const char *, size_t) noexcept nogil
    ctypedef unsigned char (*abc_ada_is_valid)(void *) noexcept nogil
    ctypedef abc_ada_string (*abc_ada_get_href)(void *) noexcept nogil
    ctypedef void (*abc_ada_free)(void *) noexcept nogil


cdef abc_ada_parse_with_base _parse = NULL
cdef abc_ada_is_valid _valid = NULL
cdef abc_ada_get_href _href = NULL
cdef abc_ada_free _free = NULL


def bind_ada(uintptr_t parse_with_base, uintptr_t is_valid, uintptr_t get_href, uintptr_t free):
    """Give :func:`join_url` the addresses of ada's ``ada_parse_with_base``, ``ada_is_valid``,
    ``ada_get_href`` and ``ada_free`` (none may be 0)."""
    global _parse, _valid, _href, _free
    if not (parse_with_base and is_valid and get_href and free):
        raise ValueError("bind_ada: every address must be non-zero")
    _parse = <abc_ada_parse_with_base>parse_with_base
    _valid = <abc_ada_is_valid>is_valid
    _href = <abc_ada_get_href>get_href
    _free = <abc_ada_free>free


def bound() -> bool:
    """:func:`bind_ada` was called."""
    return _parse != NULL


cpdef str join_url(object base_url, object s):
    """``ada_url.join_url(base_url, s)``: ``s`` parsed against ``base_url`` by the WHATWG URL
    standard, serialized; ``ValueError`` when no valid URL comes of it (or an argument is not a
    string encodable as UTF-8: a lone surrogate, None)."""
    cdef bytes b, r
    cdef void *u
    cdef abc_ada_string h
    if _parse == NULL:
        raise RuntimeError("join_url: bind_ada was not called")
    if not (isinstance(base_url, str) and isinstance(s, str)):
        raise ValueError("Invalid URL")
    try:
        b = (<str>base_url).encode("utf-8")
        r = (<str>s).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("Invalid URL") from None
    u = _parse(PyBytes_AS_STRING(r), <size_t>PyBytes_GET_SIZE(r), PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b))
    try:
        if not _valid(u):
            raise ValueError("Invalid URL")
        h = _href(u)
        if h.length == 0:
            return ""
        return PyUnicode_DecodeUTF8(h.data, <Py_ssize_t>h.length, NULL)
    finally:
        _free(u)


cdef object _UrlError = None
cdef object _canonicalize_query = None
cdef object _host_of = None


def bind_urls(url_error, canonicalize_query, host_of):
    """What :func:`canonicalize` and :func:`classify` take from ``abc_crawler.web.urls`` (which
    imports this module): ``UrlError``, the query normalization (w3lib's ``canonicalize_url``,
    imported at its first use) and ``host_of``."""
    global _UrlError, _canonicalize_query, _host_of
    _UrlError, _canonicalize_query, _host_of = url_error, canonicalize_query, host_of


cpdef object canonicalize(object href, object base=None):
    """``abc_crawler.web.urls.canonicalize_reference(href, base)``: the canonical form of ``href``
    joined with ``base``, None if not http(s); ``UrlError`` for a URL that cannot be parsed or
    carries credentials."""
    cdef str url, rest
    cdef Py_ssize_t cut, slash
    href = href.strip()
    try:
        url = join_url(base, href) if base is not None else join_url(href, "")
    except ValueError:
        raise _UrlError(href, "unparsable URL") from None
    if url.startswith("http://"):
        rest = url[7:]
    elif url.startswith("https://"):
        rest = url[8:]
    else:
        return None
    cut = url.find("#")
    if cut >= 0:
        url = url[:cut]
    slash = rest.find("/")
    if "@" in (rest if slash < 0 else rest[:slash]):
        raise _UrlError(href, "URL carries credentials")
    if "?" in url or "%" in url:
        url = _canonicalize_query(url)
    return url


cpdef object trap_reason(object url, Py_ssize_t max_length, Py_ssize_t max_depth, Py_ssize_t max_repeats):
    """``abc_crawler.sched.limits.trap_reason(url, max_length=..., max_depth=..., max_repeats=...)``:
    why a canonical URL is refused as a likely trap, or None. The length and the count of ``/``
    in the path are looked at here; a path with more segments than a limit goes to the Python."""
    cdef Py_ssize_t start, end, i, n, slashes = 0
    cdef Py_UCS4 c
    cdef str u
    if not isinstance(url, str):
        raise TypeError(f"trap_reason: expected a str, got {type(url).__name__}")
    u = <str>url
    n = len(u)
    if n > max_length:
        return "url_too_long"
    start = u.find("/", u.find("://") + 3)
    if start < 0:
        return None
    end = u.find("?", start)
    if end < 0:
        end = n
    for i in range(start, end):
        c = u[i]
        if c == "/":
            slashes += 1
    if slashes <= max_depth and slashes <= max_repeats:
        return None                     # fewer segments than either limit
    from abc_crawler.sched.limits import trap_reason as reference
    return reference(url, max_length=max_length, max_depth=max_depth, max_repeats=max_repeats)


cpdef tuple classify(object links, object href, object base_url, bint any_host=False):
    """``LinkClassifier.classify_reference``: the :data:`Target` of one reference to follow, else
    ``(None, reason, detail)``. ``links``: the ``LinkClassifier`` (its scope, rules, trap limits
    and ``target``)."""
    cdef object url, why, rules
    cdef dict limits
    try:
        url = canonicalize(href, base_url)
    except _UrlError:
        return None, "invalid", None
    if url is None:
        return None, "not_http", None
    if not links.scope.allows_url(url):
        return None, "out_of_scope", _host_of(url)
    rules = links.rules
    if not any_host and rules.active:
        why = rules.reason(url)
        if why is not None:
            return None, why, (_host_of(url) if why == "out_of_scope_domain" else None)
    limits = links.trap_limits
    why = trap_reason(url, limits["max_length"], limits["max_depth"], limits["max_repeats"])
    if why is not None:
        return None, why, None
    return links.target(url)


cdef inline bint _ascii_prefix(str k, str lower_prefix):
    """``k`` starts with ``lower_prefix`` (lower-case ASCII) in any ASCII case."""
    cdef Py_ssize_t i, n = len(lower_prefix)
    cdef Py_UCS4 ch
    cdef unsigned int c
    if len(k) < n:
        return False
    for i in range(n):
        ch = k[i]
        c = <unsigned int>ch
        if 0x41 <= c <= 0x5A:
            c += 0x20
        ch = lower_prefix[i]
        if c != <unsigned int>ch:
            return False
    return True


def link_pass(list hrefs, object scheme, object origin, object base_dir, object cache, object decide,
              object links, object out_of_scope_hosts):
    """The targets of ``hrefs`` (distinct by fingerprint, in page order) and the reasons of the
    others counted into ``links`` (and the hosts of out-of-scope ones into
    ``out_of_scope_hosts``): ``LinkClassifier.targets``' loop. ``scheme``, ``origin``,
    ``base_dir``: of the page's base; ``cache``: a :class:`DecisionCache`; ``decide(href)``: the
    decision of a reference not in the cache."""
    cdef dict out = {}
    cdef dict newer = cache.new
    cdef str href, k
    cdef object key, hit, item
    cdef Py_ssize_t cut
    cdef Py_UCS4 c0, c1
    for item in hrefs:
        if not isinstance(item, str):            # a str subclass (lxml's attribute results) is one
            raise TypeError(f"link_pass: a reference is a str, not {type(item).__name__}")
        href = <str>item
        key = None
        hit = None
        if len(href) > 0 and href[0] not in "?# \t\n\r":
            cut = href.find("#")
            k = href if cut < 0 else href[:cut]
            # the key names what the decision depends on (LinkClassifier.targets_reference)
            if _ascii_prefix(k, "http://") or _ascii_prefix(k, "https://"):
                key = k[:8].lower() + k[8:]
            else:
                c0 = k[0]
                if c0 == "/":
                    c1 = k[1] if len(k) > 1 else 0
                    key = (scheme, k) if (c1 == "/" or c1 == "\\") else (origin, k)
                else:
                    key = (base_dir, k)
            hit = newer.get(key)
            if hit is None:
                hit = cache.get(key)
                newer = cache.new          # a hit in the older may have started a new generation
        if hit is None:
            hit = decide(href)
            if key is not None:
                cache.put(key, hit)
                newer = cache.new
        if (<tuple>hit)[0] is not None:
            out[(<tuple>hit)[1]] = hit
        else:
            links[(<tuple>hit)[1]] += 1
            if (<tuple>hit)[2] is not None:
                out_of_scope_hosts[(<tuple>hit)[2]] += 1
    return list(out.values())
