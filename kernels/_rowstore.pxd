# cython: language_level=3
"""Row-wise storage of an O(n^2) matrix that grows without an O(n^2) peak.

A ``RowStore`` keeps the rows in *slabs*, blocks of a fixed number of rows,
and a table of row pointers.  Adding rows allocates slabs as needed; making
the rows longer (more columns) copies them slab by slab into slabs of the
new row length and frees each old slab as soon as its rows are copied, so
the transient extra memory is about two slabs, never a second matrix.  With
the column policy of ``grown_capacity`` the matrix holds at most
~1.0625 n^2 cells (n = rows in use), plus the unused tail of the last slab.

Small matrices use slabs of up to 64 KiB from ``PyMem_RawMalloc``.  Large ones
(the caller decides: the kernels ask for it from 32 MiB on) use 2 MiB
slabs that are 2 MiB-aligned anonymous mappings marked ``MADV_HUGEPAGE``
on Linux: the kernels touch rows all over a matrix of hundreds of MB, and
with 4 KiB pages nearly every access is a TLB miss (measured: about 1.4x
faster at n = 10000 with huge pages).  The unused tail of the last slab is
at most one slab, i.e. < 64 KiB or < 2 MiB (under 6 % of a 32 MiB matrix).
Both kinds are reported to ``tracemalloc``.

Cells past the used columns are kept at the fill byte (0xFF for distance
matrices = unreachable, 0x00 for bit matrices), so a new column is already
initialised in every existing row.

A failure to allocate while lengthening the rows leaves the store
*broken* (``rowstore_set_row_bytes`` returns -2): its rows can no longer be
used, only freed.  The wrappers then refuse further use.
"""
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.string cimport memcpy, memset

cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    #define ABC_TRACE_DOMAIN 0xABC0u
    #define ABC_HUGE_PAGE ((size_t)2 << 20)
    #if defined(__linux__)
    #include <sys/mman.h>
    /* bytes: a multiple of ABC_HUGE_PAGE.  Returns a 2 MiB-aligned block. */
    static void *abc_huge_alloc(size_t bytes) {
        size_t span = bytes + ABC_HUGE_PAGE;
        char *p = (char *)mmap(NULL, span, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        uintptr_t a = ((uintptr_t)p + ABC_HUGE_PAGE - 1) & ~(uintptr_t)(ABC_HUGE_PAGE - 1);
        size_t head = (size_t)(a - (uintptr_t)p), tail = span - head - bytes;
        if (head) munmap(p, head);
        if (tail) munmap((char *)a + bytes, tail);
    #ifdef MADV_HUGEPAGE
        madvise((void *)a, bytes, MADV_HUGEPAGE);   /* a hint; failure is harmless */
    #endif
        PyTraceMalloc_Track(ABC_TRACE_DOMAIN, a, bytes);
        return (void *)a;
    }
    static void abc_huge_free(void *p, size_t bytes) {
        if (p == NULL) return;
        PyTraceMalloc_Untrack(ABC_TRACE_DOMAIN, (uintptr_t)p);
        munmap(p, bytes);
    }
    #else
    static void *abc_huge_alloc(size_t bytes) { return PyMem_RawMalloc(bytes); }
    static void abc_huge_free(void *p, size_t bytes) { (void)bytes; PyMem_RawFree(p); }
    #endif
    """
    void* abc_huge_alloc(size_t nbytes) noexcept nogil
    void abc_huge_free(void* p, size_t nbytes) noexcept nogil
    size_t ABC_HUGE_PAGE

cdef enum:
    SMALL_SLAB = 1 << 16        # bytes per slab of a small matrix
    HUGE_MATRIX = 1 << 25       # the kernels use huge-page slabs from 32 MiB on


cdef struct Slab:
    char* ptr
    Py_ssize_t nbytes
    int huge


cdef struct RowStore:
    char** rows             # rows[0 .. n_rows-1], each row_bytes long
    Py_ssize_t n_rows       # rows in use
    Py_ssize_t table_cap    # length of the row pointer table
    Py_ssize_t row_bytes    # allocated bytes of every row
    Slab* slabs             # row r lives in slabs[r // slab_rows]
    Py_ssize_t n_slabs
    Py_ssize_t slabs_cap
    Py_ssize_t slab_rows    # rows per slab for the current row_bytes
    int huge                # current slabs are huge-page mappings
    int broken              # a failed re-layout: only rowstore_free is allowed


cdef inline void rowstore_init(RowStore* s) noexcept nogil:
    s.rows = NULL
    s.n_rows = 0
    s.table_cap = 0
    s.row_bytes = 0
    s.slabs = NULL
    s.n_slabs = 0
    s.slabs_cap = 0
    s.slab_rows = 1
    s.huge = 0
    s.broken = 0


cdef inline void _slab_layout(Py_ssize_t row_bytes, int huge, Py_ssize_t* slab_rows,
                              Py_ssize_t* nbytes) noexcept nogil:
    cdef Py_ssize_t hp = <Py_ssize_t> ABC_HUGE_PAGE
    if row_bytes <= 0:
        slab_rows[0] = SMALL_SLAB
        nbytes[0] = 1
    elif huge:
        slab_rows[0] = hp // row_bytes if row_bytes <= hp else 1
        nbytes[0] = (slab_rows[0] * row_bytes + hp - 1) // hp * hp
    else:
        # 64 KiB, but no more rows than a row has bytes (or 16): tiny
        # matrices stay tiny.
        slab_rows[0] = SMALL_SLAB // row_bytes if row_bytes <= SMALL_SLAB else 1
        if slab_rows[0] > row_bytes and row_bytes >= 16:
            slab_rows[0] = row_bytes
        elif slab_rows[0] > 16 and row_bytes < 16:
            slab_rows[0] = 16
        nbytes[0] = slab_rows[0] * row_bytes


cdef inline char* _slab_alloc(Py_ssize_t nbytes, int huge) noexcept nogil:
    if huge:
        return <char*> abc_huge_alloc(<size_t> nbytes)
    return <char*> PyMem_RawMalloc(<size_t> nbytes)


cdef inline void _slab_free(Slab* sl) noexcept nogil:
    if sl.huge:
        abc_huge_free(sl.ptr, <size_t> sl.nbytes)
    else:
        PyMem_RawFree(sl.ptr)
    sl.ptr = NULL


cdef inline int _slabs_reserve(Slab** slabs, Py_ssize_t* cap, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t new_cap
    cdef Slab* p
    if need <= cap[0]:
        return 0
    new_cap = 2 * cap[0]
    if new_cap < need:
        new_cap = need
    p = <Slab*> PyMem_RawRealloc(slabs[0], <size_t> new_cap * sizeof(Slab))
    if p == NULL:
        return -1
    slabs[0] = p
    cap[0] = new_cap
    return 0


cdef inline void rowstore_free(RowStore* s) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(s.n_slabs):
        if s.slabs[i].ptr != NULL:
            _slab_free(&s.slabs[i])
    PyMem_RawFree(s.slabs)
    PyMem_RawFree(s.rows)
    rowstore_init(s)


cdef inline Py_ssize_t rowstore_nbytes(RowStore* s) noexcept nogil:
    """Bytes held by the slabs (the matrix, including unused slab tails)."""
    cdef Py_ssize_t i, total = 0
    for i in range(s.n_slabs):
        if s.slabs[i].ptr != NULL:
            total += s.slabs[i].nbytes
    return total


cdef inline int rowstore_set_row_bytes(RowStore* s, Py_ssize_t new_bytes,
                                       int fill, int huge) noexcept nogil:
    """Lengthen every row to ``new_bytes``, the new tail set to ``fill``; the
    slabs become huge-page slabs if ``huge``.

    Returns 0; -1 when out of memory before anything moved (the store is
    unchanged); -2 when out of memory half-way (the store is broken).
    """
    cdef Py_ssize_t r = 0, old_rows = s.slab_rows, new_rows, slab_bytes, n_new = 0, new_cap = 0
    cdef Slab* new_slabs = NULL
    cdef char* p
    cdef char* row
    if new_bytes <= s.row_bytes:
        return 0
    _slab_layout(new_bytes, huge, &new_rows, &slab_bytes)
    if s.n_rows == 0:
        s.row_bytes = new_bytes
        s.slab_rows = new_rows
        s.huge = huge
        return 0
    # Copy the rows in order; a new slab is allocated when the previous one
    # is full and an old slab is freed as soon as its last row is copied, so
    # at most one new and one old slab are partly used at any time.
    for r in range(s.n_rows):
        if r % new_rows == 0:
            if _slabs_reserve(&new_slabs, &new_cap, n_new + 1) != 0:
                break
            p = _slab_alloc(slab_bytes, huge)
            if p == NULL:
                break
            new_slabs[n_new].ptr = p
            new_slabs[n_new].nbytes = slab_bytes
            new_slabs[n_new].huge = huge
            n_new += 1
        row = new_slabs[n_new - 1].ptr + (r % new_rows) * new_bytes
        memcpy(row, s.rows[r], <size_t> s.row_bytes)
        memset(row + s.row_bytes, fill, <size_t> (new_bytes - s.row_bytes))
        s.rows[r] = row
        if (r + 1) % old_rows == 0 or r + 1 == s.n_rows:
            _slab_free(&s.slabs[r // old_rows])
    else:
        PyMem_RawFree(s.slabs)
        s.slabs = new_slabs
        s.n_slabs = n_new
        s.slabs_cap = new_cap
        s.row_bytes = new_bytes
        s.slab_rows = new_rows
        s.huge = huge
        return 0
    # Out of memory at row r.
    if r == 0:
        PyMem_RawFree(new_slabs)
        return -1
    s.broken = 1
    if _slabs_reserve(&s.slabs, &s.slabs_cap, s.n_slabs + n_new) == 0:
        memcpy(s.slabs + s.n_slabs, new_slabs, <size_t> n_new * sizeof(Slab))
        s.n_slabs += n_new
    PyMem_RawFree(new_slabs)      # (if even that failed, the new slabs leak)
    return -2


cdef inline int rowstore_add_rows(RowStore* s, Py_ssize_t k, int fill) noexcept nogil:
    """Append ``k`` rows of ``row_bytes``, every byte set to ``fill``.

    All or nothing: returns 0, or -1 when out of memory (no row added).
    """
    cdef Py_ssize_t r, new_cap, first_slab = s.n_slabs, slab_bytes, slab_rows = s.slab_rows
    cdef char** table
    cdef char* p
    if k <= 0:
        return 0
    if s.n_rows + k > s.table_cap:
        new_cap = 2 * s.table_cap
        if new_cap < s.n_rows + k:
            new_cap = s.n_rows + k
        table = <char**> PyMem_RawRealloc(s.rows, <size_t> new_cap * sizeof(char*))
        if table == NULL:
            return -1
        s.rows = table
        s.table_cap = new_cap
    slab_bytes = slab_rows * s.row_bytes
    if s.huge:
        slab_bytes = (slab_bytes + <Py_ssize_t> ABC_HUGE_PAGE - 1) // <Py_ssize_t> ABC_HUGE_PAGE * <Py_ssize_t> ABC_HUGE_PAGE
    elif slab_bytes <= 0:
        slab_bytes = 1
    for r in range(s.n_rows, s.n_rows + k):
        if r // slab_rows >= s.n_slabs:
            p = NULL
            if _slabs_reserve(&s.slabs, &s.slabs_cap, s.n_slabs + 1) == 0:
                p = _slab_alloc(slab_bytes, s.huge)
            if p == NULL:
                while s.n_slabs > first_slab:
                    s.n_slabs -= 1
                    _slab_free(&s.slabs[s.n_slabs])
                return -1
            s.slabs[s.n_slabs].ptr = p
            s.slabs[s.n_slabs].nbytes = slab_bytes
            s.slabs[s.n_slabs].huge = s.huge
            s.n_slabs += 1
    for r in range(s.n_rows, s.n_rows + k):
        s.rows[r] = s.slabs[r // slab_rows].ptr + (r % slab_rows) * s.row_bytes
        memset(s.rows[r], fill, <size_t> s.row_bytes)
    s.n_rows += k
    return 0
