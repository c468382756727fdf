# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""FPSet: a set of exact 64-bit fingerprints with two flag bits (URL-seen, reported).

An open-addressing table with linear probing over two NumPy arrays: ``keys``
(uint64) and ``flags`` (uint8). A slot is occupied when its flags are non-zero,
so every 64-bit value, 0 included, is a valid key. Flag ``SEEN`` is the
crawler's URL-seen set, ``REPORTED`` replaces its second set (URLs whose text
rank 0 already has); the two memberships are independent. Capacity is a power
of two, grown by doubling at a load of 0.7 (9 bytes per slot: 12.9 to 25.7
bytes per fingerprint), in anonymous memory maps.

Checkpoints: with ``journal=True`` every fingerprint whose flags change is
appended to a change list once (flag bit 4 marks it listed until the next
``take_changes``); ``take_changes()`` returns the changed fingerprints
with their current flags (for an append-only checkpoint log) and clears it;
``merge(keys, flags)`` ORs such records back in.

The pure-Python reference is ``abc_crawler.sched.seen.PyFPSet``.
"""
import mmap

import numpy as np

from libc.stdint cimport uint8_t, uint64_t

cdef uint64_t _GOLD = 0x9E3779B97F4A7C15ULL

SEEN = 1
REPORTED = 2


cdef class FPSet:
    cdef public object keys_arr
    cdef public object flags_arr
    cdef uint64_t[::1] keys
    cdef uint8_t[::1] flags
    cdef Py_ssize_t cap
    cdef int shift
    cdef Py_ssize_t used
    cdef Py_ssize_t n_seen
    cdef Py_ssize_t nrep
    cdef Py_ssize_t grow_at
    cdef bint jon
    cdef object jbuf
    cdef uint64_t[::1] jv
    cdef Py_ssize_t jn

    def __cinit__(self, Py_ssize_t capacity=1024, bint journal=False):
        cdef Py_ssize_t cap = 16
        while cap < capacity:
            cap *= 2
        self._alloc(cap)
        self.used = 0
        self.n_seen = 0
        self.nrep = 0
        self.jon = journal
        self.jbuf = np.empty(64, dtype=np.uint64)
        self.jv = self.jbuf
        self.jn = 0

    cdef void _alloc(self, Py_ssize_t cap):
        cdef int bits = 0
        while (<Py_ssize_t>1 << bits) < cap:
            bits += 1
        # anonymous mappings: zero pages touched only when used, and given back to the system
        # as soon as a grown-out table is dropped (a malloc'ed table would leave heap holes)
        self.keys_arr = np.frombuffer(mmap.mmap(-1, cap * 8), dtype=np.uint64)
        self.flags_arr = np.frombuffer(mmap.mmap(-1, cap), dtype=np.uint8)
        self.keys = self.keys_arr
        self.flags = self.flags_arr
        self.cap = cap
        self.shift = 64 - bits
        self.grow_at = (cap * 7) // 10

    cdef inline Py_ssize_t _slot(self, uint64_t fp) nogil:
        """Index of fp's slot, or of the empty slot where it would go."""
        cdef Py_ssize_t mask = self.cap - 1
        cdef Py_ssize_t i = <Py_ssize_t>((fp * _GOLD) >> self.shift)
        while self.flags[i] != 0 and self.keys[i] != fp:
            i = (i + 1) & mask
        return i

    cdef void _grow(self):
        cdef object old_k = self.keys_arr
        cdef object old_f = self.flags_arr
        cdef uint64_t[::1] ok = old_k
        cdef uint8_t[::1] of = old_f
        cdef Py_ssize_t n = self.cap, j, i
        self._alloc(self.cap * 2)
        for j in range(n):
            if of[j] != 0:
                i = self._slot(ok[j])
                self.keys[i] = ok[j]
                self.flags[i] = of[j]

    cdef inline void _log(self, uint64_t fp):
        if self.jn == self.jv.shape[0]:
            new = np.frombuffer(mmap.mmap(-1, 16 * self.jn), dtype=np.uint64)
            new[:self.jn] = self.jbuf[:self.jn]
            self.jbuf = new
            self.jv = self.jbuf
        self.jv[self.jn] = fp
        self.jn += 1

    cdef inline bint _set(self, uint64_t fp, uint8_t bit):
        """Set ``bit`` on fp; True if it was not set."""
        cdef Py_ssize_t i = self._slot(fp)
        cdef uint8_t f = self.flags[i]
        if f & bit:
            return False
        if f == 0:
            if self.used + 1 > self.grow_at:
                self._grow()
                i = self._slot(fp)
            self.keys[i] = fp
            self.used += 1
        f |= bit
        if self.jon and not (f & 4):     # once per fingerprint between two take_changes()
            f |= 4
            self._log(fp)
        self.flags[i] = f
        return True

    # -- the URL-seen set -----------------------------------------------------
    def add(self, uint64_t fp):
        """Mark fp seen; True if it was not (the URL-seen test and insert in one probe)."""
        if self._set(fp, 1):
            self.n_seen += 1
            return True
        return False

    def __contains__(self, uint64_t fp):
        cdef Py_ssize_t i = self._slot(fp)
        return (self.flags[i] & 1) != 0

    def __len__(self):
        return self.n_seen

    # -- reported to rank 0 ---------------------------------------------------
    def report(self, uint64_t fp):
        """Mark fp reported; True if it was not."""
        if self._set(fp, 2):
            self.nrep += 1
            return True
        return False

    def is_reported(self, uint64_t fp):
        cdef Py_ssize_t i = self._slot(fp)
        return (self.flags[i] & 2) != 0

    @property
    def n_reported(self):
        return self.nrep

    @property
    def capacity(self):
        return self.cap

    @property
    def nbytes(self):
        return self.cap * 9

    # -- checkpoints ----------------------------------------------------------
    @property
    def journal(self):
        return self.jon

    @journal.setter
    def journal(self, bint on):
        if not on and self.jn:
            self.take_changes()          # clears the journaled marks
        self.jon = on

    def take_changes(self):
        """(keys uint64, flags uint8) of the fingerprints changed since the last call; clears the list."""
        cdef Py_ssize_t n = self.jn, j
        keys = np.array(self.jbuf[:n], dtype=np.uint64)
        flags = np.empty(n, dtype=np.uint8)
        cdef uint8_t[::1] fv = flags
        cdef Py_ssize_t i
        for j in range(n):
            i = self._slot(self.jv[j])
            fv[j] = self.flags[i] & 3
            self.flags[i] &= 3
        self.jn = 0
        if self.jv.shape[0] > 4096:
            self.jbuf = np.empty(64, dtype=np.uint64)
            self.jv = self.jbuf
        return keys, flags

    def seen_keys(self):
        """The fingerprints marked seen (a new array; the table's order)."""
        return self.keys_arr[(self.flags_arr & 1) != 0]

    def items(self):
        """(keys, flags) of every fingerprint held."""
        occ = self.flags_arr != 0
        return self.keys_arr[occ].copy(), self.flags_arr[occ] & 3

    def merge(self, keys, flags):
        """OR flags into the fingerprints (records of ``take_changes``/``items``); not journaled."""
        cdef uint64_t[::1] kv = np.ascontiguousarray(keys, dtype=np.uint64)
        cdef uint8_t[::1] fv = np.ascontiguousarray(flags, dtype=np.uint8)
        cdef Py_ssize_t j, i
        cdef uint8_t f, new
        if kv.shape[0] != fv.shape[0]:
            raise ValueError("keys and flags differ in length")
        for j in range(kv.shape[0]):
            new = fv[j] & 3
            if new == 0:
                continue
            i = self._slot(kv[j])
            f = self.flags[i]
            if f == 0:
                if self.used + 1 > self.grow_at:
                    self._grow()
                    i = self._slot(kv[j])
                self.keys[i] = kv[j]
                self.used += 1
            if (new & 1) and not (f & 1):
                self.n_seen += 1
            if (new & 2) and not (f & 2):
                self.nrep += 1
            self.flags[i] = f | new
