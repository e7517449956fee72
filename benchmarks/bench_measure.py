"""What a run cost besides time: peak driver memory (sampled) and the files it left behind."""

import os
import threading
from pathlib import Path


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int):
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            yield int(child)


class Sampler:
    """Peak JVM heap in use (the Spark driver, sampled through py4j) and peak resident memory of
    this process plus the JVM, every 0.2 s while the block runs."""

    def __init__(self, spark) -> None:
        self.memory = spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        self.pids = [os.getpid(), *_children(os.getpid())]
        self.heap_peak_mb = 0.0
        self.rss_peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        heap = self.memory.getHeapMemoryUsage().getUsed() / 2**20
        rss = sum(_rss_mb(pid) for pid in self.pids)
        self.heap_peak_mb = round(max(self.heap_peak_mb, heap), 1)
        self.rss_peak_mb = round(max(self.rss_peak_mb, rss), 1)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self) -> "Sampler":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def file_snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path): (stat.st_size, stat.st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file() and (stat := path.stat())
    }


def written_since(folder: Path, before: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Bytes and Parquet files that are new or rewritten since `before` (checksums excluded), and
    how many of the files are outside `_scratchPad` (in a landing zone: the published ones)."""
    new = {p: s for p, s in file_snapshot(folder).items() if before.get(p) != s and not p.endswith(".crc")}
    parquet = [p for p in new if p.endswith(".parquet")]
    return {
        "bytes": sum(size for size, _ in new.values()),
        "files": len(parquet),
        "published": sum(1 for p in parquet if "/_scratchPad/" not in p),
    }
