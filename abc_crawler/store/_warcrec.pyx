# cython: language_level=3, boundscheck=False, wraparound=False
"""The WARC writer's per-record Python, compiled (issue 37: the output path).

Each function is the compiled twin of Python code that stays as its reference
(``tests/test_warcrec.py`` holds each pair equal):

- :func:`b32_sha1` -- ``abc_crawler.store.digests.b32_sha1_reference``: base32 of a SHA-1 digest,
  one table lookup per five bits;
- :func:`surt_key` -- ``abc_crawler.store.cdxj.surt_key_reference``: the SURT key of a plain
  URL (http(s), a host of lower-case labels, an optional port, a path of unreserved
  characters, nothing else) read in one scan; every other URL is handed to the reference;
- :func:`cdxj_line` -- ``abc_crawler.store.cdxj.cdxj_line_reference``: one CDXJ index line;
- :func:`page_records` -- ``abc_crawler.store.warc.page_records_reference``: one answer's
  request record and its response or revisit record, uncompressed;
- :func:`record` -- ``abc_crawler.store.warc.record_reference``: a warcinfo or metadata record.

The SHA-1 digests and deflate are C either way; what is compiled is the Python between them
(``bench/page_costs.py``: ``abc warc`` against ``abc warc py``).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeASCII

from hashlib import sha1 as _sha1

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


# ---------------------------------------------------------------- records

cdef object _media_type = None         # cdxj.media_type
cdef object _header_lines_slow = None  # warc._header_lines: headers with a CR or LF in them
cdef object _index_status = None       # warc._index_status
cdef str _PROFILE_IDENTICAL = ""
cdef str _PROFILE_NOT_MODIFIED = ""


def bind_records(media_type, header_lines, index_status, str profile_identical, str profile_not_modified):
    """What the records are made with: ``cdxj.media_type``, ``warc._header_lines`` (for headers
    that hold a CR or LF), ``warc._index_status`` and the two revisit profiles."""
    global _media_type, _header_lines_slow, _index_status, _PROFILE_IDENTICAL, _PROFILE_NOT_MODIFIED
    _media_type, _header_lines_slow, _index_status = media_type, header_lines, index_status
    _PROFILE_IDENTICAL, _PROFILE_NOT_MODIFIED = profile_identical, profile_not_modified


cdef str _header_lines(headers):
    """``warc._header_lines``: ``"k: v\\r\\n"`` for every header (the reference's for CR/LF)."""
    cdef Py_ssize_t n
    if not headers:
        return ""
    s = "\r\n".join([f"{k}: {v}" for k, v in headers])
    n = len(headers) - 1
    if s.count("\n") != n or s.count("\r") != n:
        return _header_lines_slow(headers)
    return s + "\r\n"


def page_records(r, str date, dig, first, ref, str req_id, str rec_id):
    """``warc.page_records_reference``: one answer's request record and its response, revisit or
    server-not-modified revisit record, uncompressed, and the index fields of the second."""
    body = r.body
    url = r.url
    uri_line = f"WARC-Target-URI: {url}\r\n" if url else ""
    ip = r.ip
    ip_line = f"WARC-IP-Address: {ip}\r\n" if ip else ""
    slash = url.find("/", url.find("://") + 3)
    target = url[slash:] if slash >= 0 else "/"
    req_block = f"GET {target} HTTP/1.1\r\n{_header_lines(r.request_headers)}\r\n".encode("utf-8")
    req = b"".join((
        f"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: {req_id}\r\nWARC-Date: {date}\r\n{uri_line}"
        f"Content-Type: application/http; msgtype=request\r\n"
        f"WARC-Block-Digest: sha1:{b32_sha1(_sha1(req_block).digest())}\r\n"
        f"Content-Length: {len(req_block)}\r\n\r\n".encode("utf-8"),
        req_block, b"\r\n\r\n"))
    http_head = r.raw_head
    if not http_head:
        status_line = r.status_line or f"HTTP/1.1 {r.status}"
        status_line = status_line.replace("\r", " ").replace("\n", " ")
        http_head = f"{status_line}\r\n{_header_lines(r.headers)}\r\n".encode("latin-1", "replace")
    block_sha1 = _sha1(http_head)
    if first is None and ref is None:
        payload_digest = dig
        block_sha1.update(body)
        truncated = "WARC-Truncated: unspecified\r\n" if r.truncated else ""
        rec = b"".join((
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {rec_id}\r\nWARC-Date: {date}\r\n"
            f"{uri_line}WARC-Concurrent-To: {req_id}\r\n{ip_line}WARC-Payload-Digest: {payload_digest}\r\n"
            f"{truncated}Content-Type: application/http; msgtype=response\r\n"
            f"WARC-Block-Digest: sha1:{b32_sha1(block_sha1.digest())}\r\n"
            f"Content-Length: {len(http_head) + len(body)}\r\n\r\n".encode("utf-8"),
            http_head, body, b"\r\n\r\n"))
        mime = _media_type(r.header("content-type"))
    else:
        if ref is not None:
            profile = _PROFILE_NOT_MODIFIED
            ref_uri, ref_date, payload_digest = ref
        else:
            profile = _PROFILE_IDENTICAL
            ref_uri, ref_date = first
            payload_digest = dig
        rec = b"".join((
            f"WARC/1.1\r\nWARC-Type: revisit\r\nWARC-Record-ID: {rec_id}\r\nWARC-Date: {date}\r\n"
            f"{uri_line}WARC-Concurrent-To: {req_id}\r\n{ip_line}WARC-Payload-Digest: {payload_digest}\r\n"
            f"WARC-Profile: {profile}\r\nWARC-Refers-To-Target-URI: {ref_uri}\r\n"
            f"WARC-Refers-To-Date: {ref_date}\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"WARC-Block-Digest: sha1:{b32_sha1(block_sha1.digest())}\r\n"
            f"Content-Length: {len(http_head)}\r\n\r\n".encode("utf-8"),
            http_head, b"\r\n\r\n"))
        mime = "warc/revisit"
    return req, rec, (mime, _index_status(http_head), payload_digest)


def record(warc_type, url, date, content_type, block, block_sha1, extra, record_id):
    """``warc.record_reference``: a whole record (warcinfo, metadata), uncompressed."""
    head = [f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"]
    if url:
        head.append(f"WARC-Target-URI: {url}\r\n")
    for k, v in extra:
        head.append(f"{k}: {v}\r\n")
    head.append(f"Content-Type: {content_type}\r\nWARC-Block-Digest: sha1:{b32_sha1(block_sha1.digest())}\r\n"
                f"Content-Length: {len(block)}\r\n\r\n")
    return "".join(head).encode("utf-8") + block + b"\r\n\r\n"
