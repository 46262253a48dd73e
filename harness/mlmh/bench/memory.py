"""Peak resident memory of this process during a measurement, read from ``/proc`` where Linux allows.

torch allocates outside Python's heap, so ``tracemalloc`` would miss it; the resident set size does not.
"""

from __future__ import annotations

import re
import resource
import sys
from pathlib import Path


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field_name: str) -> int | None:
    try:
        match = re.search(rf"^{field_name}:\s+(\d+)\s+kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _maxrss_kib() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage // 1024 if sys.platform == "darwin" else usage  # bytes on macOS, KiB on Linux


class PeakMemory:
    """Peak resident memory of this process during a block, in MiB.

    ``method`` says how it was measured: "vmhwm-reset" (exact peak, Linux) or "maxrss-delta" (growth of
    the lifetime peak: 0 when the block stayed below an earlier peak).
    """

    def __init__(self) -> None:
        self.method = "vmhwm-reset" if self._can_reset() else "maxrss-delta"
        self._start_kib = 0

    @staticmethod
    def _can_reset() -> bool:
        if _status_kib("VmHWM") is None:
            return False
        try:
            _CLEAR_REFS.write_text("5")
        except OSError:
            return False
        return True

    def start(self) -> None:
        if self.method == "vmhwm-reset":
            _CLEAR_REFS.write_text("5")
            self._start_kib = _status_kib("VmRSS") or 0
        else:
            self._start_kib = _maxrss_kib()

    def peak_mib(self) -> float:
        """Peak RSS since :meth:`start` (vmhwm-reset) or growth of the lifetime peak (maxrss-delta)."""
        if self.method == "vmhwm-reset":
            return (_status_kib("VmHWM") or 0) / 1024
        return max(0, _maxrss_kib() - self._start_kib) / 1024
