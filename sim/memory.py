"""Sparse byte-addressed memory for the golden model's DBBIF and SRAMIF.

Pages of 64 KiB are allocated on first touch; reads of untouched bytes return 0. Addresses
are plain integers (DBBIF addresses of the nv_small traces have bit 31 set).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SparseMemory"]

_PAGE_BITS = 16
_PAGE = 1 << _PAGE_BITS


class SparseMemory:
    def __init__(self):
        self._pages: dict[int, np.ndarray] = {}

    def _page(self, n, create):
        p = self._pages.get(n)
        if p is None and create:
            p = self._pages[n] = np.zeros(_PAGE, dtype=np.uint8)
        return p

    def _spans(self, addr, size):
        """(page number, offset in page, offset in buffer, length) covering [addr, addr+size)."""
        pos = 0
        while pos < size:
            a = addr + pos
            n, off = a >> _PAGE_BITS, a & (_PAGE - 1)
            ln = min(_PAGE - off, size - pos)
            yield n, off, pos, ln
            pos += ln

    def read(self, addr: int, size: int) -> np.ndarray:
        """``size`` bytes at ``addr`` as a new uint8 array."""
        if addr < 0 or size < 0:
            raise ValueError(f"bad memory read at {addr:#x}, size {size}")
        out = np.zeros(size, dtype=np.uint8)
        for n, off, pos, ln in self._spans(addr, size):
            p = self._page(n, False)
            if p is not None:
                out[pos:pos + ln] = p[off:off + ln]
        return out

    def write(self, addr: int, data) -> None:
        data = np.asarray(data, dtype=np.uint8).reshape(-1)
        if addr < 0:
            raise ValueError(f"bad memory write at {addr:#x}")
        for n, off, pos, ln in self._spans(addr, data.size):
            self._page(n, True)[off:off + ln] = data[pos:pos + ln]

    def fill(self, addr: int, size: int, value: int = 0) -> None:
        for n, off, _, ln in self._spans(addr, size):
            self._page(n, True)[off:off + ln] = value

    def gather(self, addrs: np.ndarray) -> np.ndarray:
        """Bytes at an array of addresses (vectorized over pages)."""
        addrs = np.asarray(addrs, dtype=np.int64)
        out = np.zeros(addrs.shape, dtype=np.uint8)
        pages = addrs >> _PAGE_BITS
        for n in np.unique(pages):
            p = self._page(int(n), False)
            if p is not None:
                sel = pages == n
                out[sel] = p[addrs[sel] & (_PAGE - 1)]
        return out

    def scatter(self, addrs: np.ndarray, values: np.ndarray) -> None:
        """Write bytes to an array of addresses (vectorized over pages)."""
        addrs = np.asarray(addrs, dtype=np.int64).reshape(-1)
        values = np.asarray(values, dtype=np.uint8).reshape(-1)
        pages = addrs >> _PAGE_BITS
        for n in np.unique(pages):
            sel = pages == n
            self._page(int(n), True)[addrs[sel] & (_PAGE - 1)] = values[sel]

    def touched(self):
        """Sorted page base addresses that were ever written."""
        return [n << _PAGE_BITS for n in sorted(self._pages)]
