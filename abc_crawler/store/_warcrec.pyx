# cython: language_level=3, boundscheck=False, wraparound=False
"""The WARC writer's small per-record pieces, compiled (issue 37: the output path).

Each function is the compiled twin of Python code that stays as its reference
(``tests/test_warcrec.py`` holds each pair equal):

- :func:`b32_sha1` -- ``abc_crawler.store.digests.b32_sha1_reference``: base32 of a SHA-1 digest,
  one table lookup per five bits;
- :func:`surt_key` -- ``abc_crawler.store.cdxj.surt_key_reference``: the SURT key of a plain
  URL (http(s), a host of lower-case labels, an optional port, a path of unreserved
  characters, nothing else) read in one scan; every other URL is handed to the reference;
- :func:`cdxj_line` -- ``abc_crawler.store.cdxj.cdxj_line_reference``: one CDXJ index line.

A page costs the writer four digests in base32 and one index line: in Python that was about
20 µs a page, a seventh of the writer's CPU after the C calls (SHA-1 and deflate).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeASCII

cdef const char *_B32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

cdef object _b32_other = None          # base64's encoder: digests that are not 20 bytes
cdef object _surt_reference = None     # cdxj.surt_key_reference: URLs the scan does not take
cdef object _quote = None              # json's C string encoder (encode_basestring_ascii)


def bind_b32(other):
    """What :func:`b32_sha1` hands a digest that is not 20 bytes to (``b32_sha1_reference``)."""
    global _b32_other
    _b32_other = other


def bind_cdxj(surt_reference, quote):
    """What the index lines hand over to: the SURT key of a URL that is not plain
    (``surt_key_reference``) and JSON's C string encoder (``encode_basestring_ascii``)."""
    global _surt_reference, _quote
    _surt_reference, _quote = surt_reference, quote


def b32_sha1(digest):
    """``base64.b32encode(digest).decode()`` for a 20-byte digest (other lengths: the stdlib's)."""
    cdef char out[32]
    cdef const unsigned char *d
    cdef unsigned long long acc
    cdef int i, j
    if type(digest) is not bytes or PyBytes_GET_SIZE(digest) != 20:
        return _b32_other(digest)
    d = <const unsigned char *> PyBytes_AS_STRING(digest)
    for i in range(4):                      # 4 groups of 5 bytes = 40 bits = 8 letters
        acc = 0
        for j in range(5):
            acc = (acc << 8) | d[5 * i + j]
        for j in range(8):
            out[8 * i + j] = _B32[(acc >> (35 - 5 * j)) & 31]
    return PyUnicode_DecodeASCII(out, 32, NULL)


cdef inline bint _seg_char(Py_UCS4 c) noexcept:
    """A character of a plain path segment (besides the dots between its runs)."""
    return (u'a' <= c <= u'z') or (u'A' <= c <= u'Z') or (u'0' <= c <= u'9') or c == u'_' or c == u'~' or c == u'-'


cdef inline bint _host_char(Py_UCS4 c) noexcept:
    return (u'a' <= c <= u'z') or (u'0' <= c <= u'9') or c == u'-'


def surt_key(url):
    """The SURT key of ``url``, as ``cdxj.surt_key_reference`` gives it: computed here for a plain
    URL (what its ``_PLAIN_URL`` takes), from the reference for any other."""
    if type(url) is not str:
        return _surt_reference(url)
    return _surt(<str> url)


cdef object _surt(str url):
    cdef Py_ssize_t n = len(url), i, hs, he, ps, pe, path_s, k, seg
    cdef Py_UCS4 c
    cdef bint https, digits_only
    cdef long port = -1
    if url.startswith("http://"):
        https, i = False, 7
    elif url.startswith("https://"):
        https, i = True, 8
    else:
        return _surt_reference(url)
    # the host: labels of [a-z0-9-], single dots between them
    hs = i
    while i < n:
        c = url[i]
        if c == u':' or c == u'/':
            break
        if not (_host_char(c) or c == u'.'):
            return _surt_reference(url)
        i += 1
    he = i
    if he == hs or url[hs] == u'.' or url[he - 1] == u'.':
        return _surt_reference(url)
    for k in range(hs + 1, he):
        if url[k] == u'.' and url[k - 1] == u'.':
            return _surt_reference(url)
    # one leading www / wwwN label is dropped; what is left must not start with "www"
    if he - hs >= 3 and url[hs] == u'w' and url[hs + 1] == u'w' and url[hs + 2] == u'w':
        k = hs + 3
        while k < he and u'0' <= url[k] <= u'9':
            k += 1
        if k >= he or url[k] != u'.':
            return _surt_reference(url)           # "wwwx..." or a lone "www": not plain
        hs = k + 1
        if he - hs >= 3 and url[hs] == u'w' and url[hs + 1] == u'w' and url[hs + 2] == u'w':
            return _surt_reference(url)
    digits_only = True                            # a host of digits and dots looks like an address
    for k in range(hs, he):
        c = url[k]
        if not (c == u'.' or (u'0' <= c <= u'9')):
            digits_only = False
            break
    if digits_only:
        return _surt_reference(url)
    # the port: [1-9][0-9]{0,4}, at most 65535
    ps = pe = -1
    if i < n and url[i] == u':':
        i += 1
        ps = i
        if i >= n or not (u'1' <= url[i] <= u'9'):
            return _surt_reference(url)
        port = 0
        while i < n and u'0' <= url[i] <= u'9':
            if i - ps >= 5:
                return _surt_reference(url)
            port = port * 10 + (<long> url[i] - 48)
            i += 1
        pe = i
        if port > 65535:
            return _surt_reference(url)
    # the path: "/" and segments of [A-Za-z0-9_~-] runs joined by single dots, each ended by "/"
    # but the last; no "//", no query, no fragment
    path_s = i
    if i < n:
        if url[i] != u'/':
            return _surt_reference(url)
        i += 1
        seg = 0                                   # characters of the current segment
        while i < n:
            c = url[i]
            if c == u'/':
                if seg == 0 or url[i - 1] == u'.':
                    return _surt_reference(url)
                seg = 0
            elif c == u'.':
                if seg == 0 or url[i - 1] == u'.':
                    return _surt_reference(url)
                seg += 1
            elif _seg_char(c):
                seg += 1
            else:
                return _surt_reference(url)
            i += 1
        if seg and url[n - 1] == u'.':
            return _surt_reference(url)
    labels = url[hs:he].split(".")
    labels.reverse()
    key = ",".join(labels)
    if ps >= 0 and port != (443 if https else 80):
        key += ":" + url[ps:pe]
    if path_s >= n:
        return key + ")/"
    path = url[path_s:].lower()
    if len(path) > 1 and path[len(path) - 1] == u'/':
        path = path[:len(path) - 1]
    return key + ")" + path


def cdxj_line(url, warc_date, mime, status, digest, length, offset, filename):
    """One index line (with its newline), as ``cdxj.cdxj_line_reference`` makes it."""
    q = _quote
    parts = '{"url": ' + q(url)
    if mime is not None:
        parts += ', "mime": ' + q(mime)
    if status is not None:
        parts += ', "status": ' + q(status)
    if digest is not None:
        parts += ', "digest": ' + q(digest)
    return (f'{surt_key(url)} {warc_date[0:4]}{warc_date[5:7]}{warc_date[8:10]}{warc_date[11:13]}'
            f'{warc_date[14:16]}{warc_date[17:19]} {parts}, "length": "{length}", "offset": "{offset}", '
            f'"filename": {q(filename)}}}\n')
