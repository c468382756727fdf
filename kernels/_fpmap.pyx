# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""FPMap: exact 64-bit keys to int64 values, with bulk operations over NumPy arrays.

An open-addressing table with linear probing over three arrays in anonymous memory maps:
``keys`` (uint64), ``vals`` (int64) and ``occ`` (uint8, a slot is used when non-zero, so
every 64-bit key, 0 included, is valid). Capacity is a power of two, grown by doubling at a
load of 0.7: 17 bytes per slot, 24 to 49 bytes per key — against ~100 for a ``dict`` of
Python ints. What it is for (issue 35): rank 0's fingerprint -> URL-row index, looked up a
whole report at a time (:meth:`intern`), and a rank's content-seen table of payload digests.

The pure-Python reference is ``abc_crawler.kernels.fpmap.PyFPMap``; the validating wrapper
``abc_crawler.kernels.fpmap.new_fpmap``.
"""
import mmap

import numpy as np

from libc.stdint cimport int64_t, uint8_t, uint64_t

cdef uint64_t _GOLD = 0x9E3779B97F4A7C15ULL


cdef class FPMap:
    cdef public object keys_arr
    cdef public object vals_arr
    cdef public object occ_arr
    cdef uint64_t[::1] keys
    cdef int64_t[::1] vals
    cdef uint8_t[::1] occ
    cdef Py_ssize_t cap
    cdef int shift
    cdef Py_ssize_t used
    cdef Py_ssize_t grow_at

    def __cinit__(self, Py_ssize_t capacity=1024):
        cdef Py_ssize_t cap = 16
        while cap < capacity:
            cap *= 2
        self._alloc(cap)
        self.used = 0

    cdef void _alloc(self, Py_ssize_t cap):
        cdef int bits = 0
        while (<Py_ssize_t>1 << bits) < cap:
            bits += 1
        self.keys_arr = np.frombuffer(mmap.mmap(-1, cap * 8), dtype=np.uint64)
        self.vals_arr = np.frombuffer(mmap.mmap(-1, cap * 8), dtype=np.int64)
        self.occ_arr = np.frombuffer(mmap.mmap(-1, cap), dtype=np.uint8)
        self.keys = self.keys_arr
        self.vals = self.vals_arr
        self.occ = self.occ_arr
        self.cap = cap
        self.shift = 64 - bits
        self.grow_at = (cap * 7) // 10

    cdef inline Py_ssize_t _slot(self, uint64_t k) noexcept nogil:
        """Index of k's slot, or of the empty slot where it would go."""
        cdef Py_ssize_t mask = self.cap - 1
        cdef Py_ssize_t i = <Py_ssize_t>((k * _GOLD) >> self.shift)
        while self.occ[i] != 0 and self.keys[i] != k:
            i = (i + 1) & mask
        return i

    cdef void _grow(self):
        cdef object ok_a = self.keys_arr, ov_a = self.vals_arr, oo_a = self.occ_arr
        cdef uint64_t[::1] ok = ok_a
        cdef int64_t[::1] ov = ov_a
        cdef uint8_t[::1] oo = oo_a
        cdef Py_ssize_t n = self.cap, j, i
        self._alloc(self.cap * 2)
        with nogil:
            for j in range(n):
                if oo[j] != 0:
                    i = self._slot(ok[j])
                    self.keys[i] = ok[j]
                    self.vals[i] = ov[j]
                    self.occ[i] = 1

    cdef inline void _put(self, uint64_t k, int64_t v):
        cdef Py_ssize_t i = self._slot(k)
        if self.occ[i] == 0:
            if self.used + 1 > self.grow_at:
                self._grow()
                i = self._slot(k)
            self.keys[i] = k
            self.occ[i] = 1
            self.used += 1
        self.vals[i] = v

    # -- one key ----------------------------------------------------------------
    def get(self, uint64_t k, int64_t default=-1):
        cdef Py_ssize_t i = self._slot(k)
        return self.vals[i] if self.occ[i] else default

    def put(self, uint64_t k, int64_t v):
        self._put(k, v)

    def __contains__(self, uint64_t k):
        return self.occ[self._slot(k)] != 0

    def __len__(self):
        return self.used

    @property
    def capacity(self):
        return self.cap

    @property
    def nbytes(self):
        return self.cap * 17

    # -- many keys ----------------------------------------------------------------
    def lookup(self, const uint64_t[::1] ks, int64_t default=-1):
        """The values of ``ks`` (``default`` for a key not held), as an int64 array."""
        cdef Py_ssize_t n = ks.shape[0], j, i
        out = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] ov = out
        with nogil:
            for j in range(n):
                i = self._slot(ks[j])
                ov[j] = self.vals[i] if self.occ[i] else default
        return out

    def intern(self, const uint64_t[::1] ks, int64_t start):
        """Each key's value; a key not held gets the next of ``start``, ``start + 1``, ... in
        order of first appearance. Returns ``(values int64 array, new keys uint64 array)``."""
        cdef Py_ssize_t n = ks.shape[0], j, i, m = 0
        out = np.empty(n, dtype=np.int64)
        fresh = np.empty(n, dtype=np.uint64)
        cdef int64_t[::1] ov = out
        cdef uint64_t[::1] fv = fresh
        cdef int64_t nxt = start
        for j in range(n):
            i = self._slot(ks[j])
            if self.occ[i] == 0:
                if self.used + 1 > self.grow_at:
                    self._grow()
                    i = self._slot(ks[j])
                self.keys[i] = ks[j]
                self.occ[i] = 1
                self.vals[i] = nxt
                self.used += 1
                fv[m] = ks[j]
                m += 1
                nxt += 1
            ov[j] = self.vals[i]
        return out, fresh[:m].copy()

    def items(self):
        """``(keys, values)`` of every key held (in slot order)."""
        o = self.occ_arr != 0
        return self.keys_arr[o].copy(), self.vals_arr[o].copy()
