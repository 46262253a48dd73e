"""A run directory: the files one ``mlmh eval`` run owns, and the one place that reads and writes them.

The runner, the report, human evaluation, ``mlmh generate --run``, the CLI and the TUI all go through
:class:`RunDir`, so each rule below is kept in one place (docs/ARCHITECTURE.md, "The run directory"):

- A new run starts only in a missing or empty directory. A directory that holds an mlmh run (a
  ``config.json`` or ``results.json`` that reads as one) is continued with ``--resume`` or refused with
  that hint; any other content is refused, naming the directory, before anything is written.
- Every write goes to a private temp file created in the directory (``mkstemp``: ``O_EXCL``, no-follow,
  mode 0600) and is renamed onto its name with ``os.replace``, so a failed write (a full disk) leaves the
  previous file whole. A name that is a symlink is refused, never followed. New run directories are 0700.
- One process writes a run: it holds the run's lock (``.mlmh.lock``, an ``flock`` with its PID inside) from the
  start (or ``--resume``) to the end, and a second writer (a resume, or a new run on the same path) is refused in
  one line naming the holder's PID, as is any other write of the run's files meanwhile (``mlmh report``, human
  evaluation). The kernel drops the lock of a process that dies, so a killed run's lock is taken over (and said)
  by the next one.
- Only the run's own names are ever written or deleted; a run that fails on its input before generating
  anything removes just the files it created (and the directory, if it made it).
- Every file is validated where it is read; a bad one is one line naming the file (and line or key).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from mlmh.errors import DataError, MlmhError, SpecError
from mlmh.storage import schema
from mlmh.types import GENERATION_FIELDS, GenerationRow, SampleRow

#: where ``mlmh eval`` puts a new run by default, relative to the working directory
RUNS_ROOT = "runs"
RESULTS = "results.json"
CONFIG = "config.json"
GENERATIONS = "generations.jsonl"
SAMPLES = "samples.jsonl"
REPORT = "report.md"
HUMAN = "human.json"
HUMAN_KEY = "human_key.json"
HUMAN_SHEET = "human_sheet.csv"
#: the sample cache a ``--no-cache`` run keeps to itself, and the files SQLite puts beside it
PRIVATE_CACHE = "samples.sqlite"
CACHE_COMPANIONS = ("-wal", "-shm", "-journal")
#: the report's figures (PNG), by name without the suffix (mlmh.report.plots draws them)
FIGURES = ("quality_by_masking", "quality_by_masking_seen", "quality_vs_steps", "quality_vs_downstream", "crossover")
#: the lock the process writing a run holds (``flock``), with its PID inside; removed when the run ends
LOCK = ".mlmh.lock"
#: the temp files behind the atomic writes: ``.<name>.<random>.tmp``
TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"
#: what ``mlmh eval`` writes; human evaluation adds the rest of the run's own names
EVAL_NAMES = frozenset({RESULTS, CONFIG, GENERATIONS, SAMPLES, REPORT, PRIVATE_CACHE,
                        *(PRIVATE_CACHE + c for c in CACHE_COMPANIONS), *(f + ".png" for f in FIGURES)})
OWN_NAMES = EVAL_NAMES | {HUMAN, HUMAN_KEY, HUMAN_SHEET, LOCK}
#: what the builtin trackers write in the run directory (through ``TrackedRun.own_path``, which refuses links);
#: ``--resume`` refuses a link at any of them, or inside them, before any work
TRACKER_NAMES = frozenset({"tensorboard", "wandb", "mlflow.db", "mlflow-artifacts"})
#: the one of them that is a file (mlflow's SQLite store), by how its content begins; the others are folders
TRACKER_FILES = {"mlflow.db": b"SQLite format 3\x00"}


class RunDirError(MlmhError):
    """A run directory that cannot be used as asked, or a run file that cannot be written; names the path."""


# -- one writer per run ---------------------------------------------------------------------------------
def _lock_pid(fd: int) -> int | None:
    """The PID a lock file holds (None when it is empty or not a PID: a writer between its lock and its write)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _holder_pid(fd: int) -> int | None:
    """The PID of the process holding the lock on ``fd``, waiting a moment for a writer that has just taken it."""
    for _ in range(20):
        pid = _lock_pid(fd)
        if pid is not None:
            return pid
        time.sleep(0.05)
    return None


def _held(path: Path, pid: int | None, elsewhere: str = ", or choose another --output-path") -> RunDirError:
    holder = f"process {pid}" if pid is not None and pid > 0 else "another process"
    return RunDirError(f"run {path} is being written by {holder} (it holds {path / LOCK}); one process writes a run "
                       f"at a time: wait for it to finish or stop it{elsewhere}")


# -- writing one file ---------------------------------------------------------------------------------
def refuse_link(path: Path, *, under: Path | None = None, flag: str = "") -> None:
    """Run files and outputs are never written through a symlink: someone else's file may be at its end.
    ``path`` is refused when it, or a folder between ``under`` (default: its own folder) and it, is a link
    (a dangling one too); folders above ``under`` are the user's to choose."""
    path = Path(path)
    under = path.parent if under is None else Path(under)
    for part in (path, *path.parents):
        if part == under or under not in part.parents:
            break
        if part.is_symlink():
            what = "is" if part == path else f"lies under {part}, which is"
            raise RunDirError(f"{flag + ' ' if flag else ''}{path} {what} a symbolic link; mlmh does not write "
                              "through links (remove it or choose another path)")


def _open_temp(path: Path) -> tuple[IO[bytes], str]:
    """A new private (0600) temp file beside ``path``, created exclusively and without following links."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TEMP_PREFIX}{path.name}.", suffix=TEMP_SUFFIX)
    return os.fdopen(fd, "wb"), tmp


def write_atomic(path: str | Path, write: Callable[[IO[bytes]], Any]) -> Path:
    """Write ``path`` whole or not at all: ``write(handle)`` fills a private temp file that then replaces it.

    An OSError (disk full, permissions) leaves the previous file as it was and becomes one line naming the path.
    """
    path = Path(path)
    refuse_link(path)
    tmp = None
    try:
        handle, tmp = _open_temp(path)
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise RunDirError(f"cannot write {path}: {exc.strerror or exc}; the previous file, if any, is unchanged") from None
        raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    return write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))


def _json_text(data: Any) -> str:
    """Strict JSON (no NaN or infinities: :func:`mlmh.plugins.contracts.strict_json`), as every run file is written."""
    from mlmh.plugins.contracts import strict_json

    return strict_json(data, indent=2, ensure_ascii=False, default=str) + "\n"


# -- reading and checking (the shapes and their one check: mlmh.storage.schema) ----------------------------------
def _read_text(path: Path) -> str:
    from mlmh.storage.inputs import check_input_file

    try:
        raw = check_input_file(path).read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 (byte {exc.start})") from None


def read_checked_json(path: Path, what: str, shape: Any, wrap: Callable[[dict], Any] | None = None) -> Any:
    """``path``'s JSON, checked against ``shape`` (:func:`mlmh.storage.schema.checked`); a DataError naming the file and
    the key when it is not."""
    return schema.checked(path, what, _read_text(path), shape, wrap)


# -- the directory ------------------------------------------------------------------------------------
def finished_runs(root: str | Path = RUNS_ROOT) -> list[Path]:
    """The finished runs directly under ``root`` (the folder ``mlmh eval`` writes new runs into), newest first
    by when each wrote its results; none when ``root`` is missing or unreadable."""
    try:
        found = [(entry.stat().st_mtime, entry.parent) for entry in Path(root).expanduser().glob(f"*/{RESULTS}")
                 if entry.is_file() and not entry.is_symlink()]
    except OSError:
        return []
    return [path for _, path in sorted(found, key=lambda item: (-item[0], item[1].name))]


class RunDir:
    """The files of one run, by name, and every read and write of them."""

    def __init__(self, path: str | Path, *, results_name: str = RESULTS) -> None:
        self.path = Path(path).expanduser()
        self._results_name = results_name
        self._started_here = False  # this object began a new run in a missing or empty directory
        self._made_directory = False
        self._lock_fd: int | None = None  # the run's lock, while this object's process writes the run
        #: the PID whose lock this object took over (a writer that died holding it), for the run to say
        self.took_over: int | None = None

    @classmethod
    def of(cls, path: str | Path) -> "RunDir":
        """The run of a directory, or of a results file given by its own path (any name); anything but a path
        (None, a number: a notebook's slip) is one SpecError naming it."""
        from mlmh.storage.inputs import path_error, refuse_nul

        if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
            raise SpecError(f"run directory {path!r}: expected the path of a run directory or its results file "
                            "(text or pathlib.Path)")
        refuse_nul(path, "run directory")
        p = Path(path).expanduser()
        try:
            is_dir = p.is_dir()
        except OSError as exc:  # a path the system will not look up: too long, a loop of links
            raise path_error(p, exc, "run") from None
        return cls(p) if is_dir else cls(p.parent, results_name=p.name)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # -- names --------------------------------------------------------------------------------------
    @property
    def results(self) -> Path:
        return self.path / self._results_name

    @property
    def config(self) -> Path:
        return self.path / CONFIG

    @property
    def generations(self) -> Path:
        return self.path / GENERATIONS

    @property
    def samples(self) -> Path:
        return self.path / SAMPLES

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def human(self) -> Path:
        return self.path / HUMAN

    @property
    def human_key(self) -> Path:
        return self.path / HUMAN_KEY

    @property
    def human_sheet(self) -> Path:
        return self.path / HUMAN_SHEET

    @property
    def private_cache(self) -> Path:
        return self.path / PRIVATE_CACHE

    def figure(self, name: str) -> Path:
        if name not in FIGURES:
            raise ValueError(f"{name!r} is not one of the report's figures {FIGURES}")
        return self.path / f"{name}.png"

    def figures(self) -> list[Path]:
        """The report's figures this run has written."""
        return [self.figure(name) for name in FIGURES if self.figure(name).is_file()]

    def own_files(self) -> list[Path]:
        """The paths this run may write (present or not)."""
        return [self.path / name for name in sorted(OWN_NAMES | {self._results_name})]

    def is_own_name(self, name: str) -> bool:
        """A name the run writes, or the temp file of one (``.<name>.<random>.tmp``)."""
        names = OWN_NAMES | {self._results_name}
        return name in names or (name.endswith(TEMP_SUFFIX) and any(name.startswith(f"{TEMP_PREFIX}{n}.") for n in names))

    # -- state --------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """Whether the run wrote its results (the last file a run writes)."""
        return self.results.is_file()

    @property
    def unfinished(self) -> bool:
        """Whether this is a run that started and did not finish (what ``--resume`` continues)."""
        return self.config.is_file() and not self.results.is_file()

    def holds_run(self) -> bool:
        """Whether the directory holds an mlmh run: a config.json or results.json that reads as one."""
        for path, check in ((self.config, self.read_config_record), (self.results, self.read_results_data)):
            if path.is_file() and not path.is_symlink():
                try:
                    check()
                    return True
                except MlmhError:
                    pass
        return False

    def _entries(self) -> list[str]:
        try:
            return sorted(p.name for p in self.path.iterdir())
        except OSError as exc:
            raise RunDirError(f"output path {self.path} cannot be listed ({exc.strerror or exc})") from None

    def check_no_links(self) -> None:
        """Refuse a run directory where a name the run writes is a symlink (a run file, a builtin tracker's
        folder or database, or anything inside such a folder), before any work is done."""
        for name in sorted(EVAL_NAMES | TRACKER_NAMES | {self._results_name}):
            refuse_link(self.path / name)
        for name in sorted(TRACKER_NAMES):
            self._check_tracker_kind(self.path / name)
            for folder, dirs, files in os.walk(self.path / name):
                for entry in sorted(dirs + files):
                    refuse_link(Path(folder) / entry)

    def own_path(self, relative: str | Path) -> Path:
        """A path inside the run directory that an output of the run (a tracker's folder or database) may use:
        refused when it, or any folder between the run directory and it, is a symlink."""
        path = self.path / relative
        if self.path not in path.parents:
            raise ValueError(f"{relative} is not inside run {self.path}")
        refuse_link(path, under=self.path)
        self._check_tracker_kind(self.path / Path(relative).parts[0])
        return path

    def _check_tracker_kind(self, path: Path) -> None:
        """A builtin tracker's name that holds something else (a user's file where its folder goes, a FIFO where its
        database goes) is refused in one line, never written over or handed to the tracker's library."""
        if path.name not in TRACKER_NAMES or not os.path.lexists(path) or path.is_symlink():
            return
        from mlmh.storage.inputs import kind_of

        mode = path.stat().st_mode
        what = kind_of(mode)
        if path.name in TRACKER_FILES:
            wanted, fits = "SQLite database", stat.S_ISREG(mode)
            if fits and path.stat().st_size:
                with path.open("rb") as handle:
                    fits = handle.read(16) == TRACKER_FILES[path.name]
                what = "a file" if fits else "a file that is not an SQLite database"
        else:
            wanted, fits = "directory", stat.S_ISDIR(mode)
        if not fits:
            raise RunDirError(f"{path} is {what}, not the {wanted} a tracker keeps there; mlmh does not write over "
                              "it: move it away (or log to another folder)")

    # -- the writer's lock --------------------------------------------------------------------------
    @property
    def lock_file(self) -> Path:
        return self.path / LOCK

    def lock_holder(self) -> int | None:
        """The PID of the process writing this run (holding its lock), or None when none does (or this object's
        own process, through this object, is the writer)."""
        if self._lock_fd is not None:
            return None
        try:
            fd = os.open(self.lock_file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
        except OSError:  # no lock file (or a link, refused when the lock is taken): nobody writes
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_pid(fd) or -1
        except OSError:  # a file system without flock: nothing can tell
            return None
        finally:
            os.close(fd)  # closing drops a probe's lock too
        return None

    def check_no_writer(self) -> None:
        """Refuse to write into the run while another process writes it (``mlmh report``, human evaluation): every
        write of a run file passes here, and a command that writes several checks first, so it writes all or none."""
        holder = self.lock_holder()
        if holder is not None:
            raise _held(self.path, holder, elsewhere="")

    def lock(self) -> None:
        """Hold this run's lock for this process until :meth:`unlock`: refused in one line naming the holder's PID
        while another process (or another writer in this one) holds it; a lock left by a process that died is taken
        over, and its PID kept in :attr:`took_over`."""
        if self._lock_fd is not None:
            return
        refuse_link(self.lock_file)
        while True:
            try:
                fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise RunDirError(f"cannot create {self.lock_file}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder_pid(fd)
                os.close(fd)
                raise _held(self.path, pid) from None
            except OSError:  # a file system without flock: the lock file alone says who writes
                pass
            try:
                same = os.stat(self.lock_file, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the writer before released and removed it between our open and our lock: again
        previous = _lock_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._lock_fd = fd
        self.took_over = previous if previous not in (None, os.getpid()) else None

    def unlock(self) -> None:
        """Release the run's lock (removing its file) if this object holds it."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.lock_file, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                os.unlink(self.lock_file)  # while still held: a waiting writer then finds the name gone and retries
        os.close(fd)

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self, record: dict[str, Any], resume_hint: str) -> None:
        """Begin a new run here: only in a missing or empty directory, holding the run's lock; writes
        ``config.json`` first."""
        if self.path.is_symlink():
            raise RunDirError(f"output path {self.path} is a symbolic link; a run is never written through a link: "
                              "choose another --output-path")
        if self.path.exists() and not self.path.is_dir():
            from mlmh.storage.inputs import kind_of

            raise RunDirError(f"output path {self.path} is {kind_of(self.path.stat().st_mode)}, not a directory; "
                              "choose another --output-path")
        self._check_empty(resume_hint)
        if not self.path.is_dir():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.mkdir(mode=0o700)
                self._made_directory = True
            except FileExistsError:
                pass  # another run made it this instant: its lock, taken below, decides
            except OSError as exc:
                raise RunDirError(f"cannot create output path {self.path}: {exc.strerror or exc}") from None
        self.lock()
        try:
            self._check_empty(resume_hint)  # a run that began between the first check and the lock
        except BaseException:
            self.unlock()
            raise
        self._started_here = True
        try:
            self.write_config(record)
        except BaseException:
            self.forget()
            raise

    def _check_empty(self, resume_hint: str) -> None:
        """Refuse a directory another process writes (naming its PID), one that holds a run (with the hint to
        resume it), or one with anything else in it; a missing directory, or one holding only a dead writer's lock,
        passes."""
        if not self.path.is_dir():
            return
        holder = self.lock_holder()
        if holder is not None:
            raise _held(self.path, holder)
        entries = [name for name in self._entries() if name != LOCK]
        if entries:
                if self.holds_run():
                    raise SpecError(f"output path {self.path} already holds a run; continue it with `{resume_hint}` "
                                    "or choose another --output-path")
                if all(name.endswith(TEMP_SUFFIX) and self.is_own_name(name) for name in entries):
                    raise RunDirError(f"output path {self.path} holds only another mlmh run's unfinished files "
                                      f"({', '.join(entries[:3])}): a run started there first (or was killed "
                                      "before its first file); choose another --output-path")
                shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
                raise RunDirError(f"output path {self.path} is not empty and holds no mlmh run ({shown}); a new run "
                                  "goes only into a new or empty directory: choose another --output-path")

    def resume(self) -> dict[str, Any]:
        """Continue the run here, holding its lock: its saved configuration record; refused when a run file is a
        symlink or another process writes the run."""
        record = self.read_config_record()
        self.check_no_links()
        self.lock()
        return record

    def forget(self) -> None:
        """Undo a new run that stopped on its input before generating anything: remove the run's own files
        (the directory was empty when it began, so they are all this run's) and the directory if it made it."""
        if not self._started_here:
            return
        self.unlock()
        for path in self.own_files():
            if path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
        for leftover in self.path.glob(f"{TEMP_PREFIX}*{TEMP_SUFFIX}"):
            if self.is_own_name(leftover.name) and leftover.is_file() and not leftover.is_symlink():
                leftover.unlink(missing_ok=True)
        if self._made_directory:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty: anything someone else put there stays

    def private_cache_path(self) -> Path:
        """The ``--no-cache`` run's own sample cache, created private (0600; SQLite gives its -wal and -shm
        files the same mode) and never opened through a symlink."""
        for name in (PRIVATE_CACHE, *(PRIVATE_CACHE + c for c in CACHE_COMPANIONS)):
            refuse_link(self.path / name)
        try:
            fd = os.open(self.private_cache, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            os.close(fd)
        except FileExistsError:
            pass  # a resumed run's cache
        except OSError as exc:
            raise RunDirError(f"cannot create {self.private_cache}: {exc.strerror or exc}") from None
        return self.private_cache

    # -- reads --------------------------------------------------------------------------------------
    def read_config_record(self) -> dict[str, Any]:
        """config.json as the run saved it (``{"config": ..., "experiment": ...}``), checked."""
        if not self.config.is_file():
            raise SpecError(f"--resume: {self.path} holds no interrupted run (no {CONFIG})")
        return read_checked_json(self.config, "run configuration", schema.CONFIG, wrap=lambda d: d if "config" in d else {"config": d})

    def read_results_data(self) -> dict[str, Any]:
        """results.json as checked JSON (what :meth:`read_results` types)."""
        if not os.path.lexists(self.results):  # anything else there is named by the input rule (a FIFO, a device)
            raise SpecError(f"{self.results} does not exist: pass a run directory written by mlmh eval, or its "
                            f"{RESULTS}")
        return read_checked_json(self.results, f"results file ({RESULTS} of mlmh eval)", schema.RESULTS)

    def read_results(self) -> Any:
        """The typed results (RunResults) of the run as results.json holds them: the one parse of the file. A
        finished run is read by :func:`mlmh.api.load`, which also decides the comparisons of a file written
        before runs kept them (the run directory sits below the judgement, whose rules read the registry)."""
        from mlmh.types import RunResults

        data = self.read_results_data()
        try:
            return RunResults.from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # what the schema does not catch (a bug there)
            raise DataError(f"{self.results}: not a readable results file: {exc}") from None

    def read_lines(self, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, object) of each non-blank line of a JSON-lines run file
        (:func:`mlmh.storage.jsonl.read_jsonl`)."""
        from mlmh.storage.jsonl import read_jsonl

        return read_jsonl(path, finite=True)

    def read_generations(self, fields: Iterable[str] = GENERATION_FIELDS) -> list[GenerationRow]:
        """The rows of generations.jsonl; ``fields`` must be text in every row (the others read as None where
        they are not)."""
        if not self.generations.is_file():
            raise SpecError(f"{self.generations} does not exist: pass a run directory written by mlmh eval")
        rows = []
        for number, row in self.read_lines(self.generations):
            missing = [f for f in fields if not isinstance(row.get(f), str)]
            if missing:
                raise DataError(f"{self.generations}:{number}: missing or non-text field(s) {', '.join(missing)}")
            rows.append(GenerationRow.from_dict(row))
        return rows

    def read_samples(self) -> list[SampleRow]:
        """The rows of samples.jsonl (a run that logged samples), each with its generation's step trace."""
        rows = []
        for number, row in self.read_lines(self.samples):
            schema.check_row(self.samples, number, row, schema.SAMPLE)
            try:
                rows.append(SampleRow.from_dict(row))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise DataError(f"{self.samples}:{number}: bad sample line ({type(exc).__name__}: {exc})") from None
        return rows

    def read_human_key(self) -> dict[str, dict[str, str]]:
        """The items of human_key.json (item id -> condition, document, text digest), checked."""
        if not self.human_key.is_file():
            raise SpecError(f"{self.human_key} does not exist: run `mlmh human export {self.path}` first")
        return read_checked_json(self.human_key, "human evaluation key", schema.HUMAN_KEY)["items"]

    # -- writes -------------------------------------------------------------------------------------
    def _target(self, path: Path) -> Path:
        if path.parent != self.path or path.name not in OWN_NAMES | {self._results_name}:
            raise ValueError(f"{path} is not a file of run {self.path}")
        self.check_no_writer()
        if not self.path.is_dir():
            try:
                self.path.mkdir(parents=True, mode=0o700)
            except OSError as exc:
                raise RunDirError(f"cannot create {self.path}: {exc.strerror or exc}") from None
        return path

    def write_json(self, path: Path, data: Any) -> Path:
        return write_text_atomic(self._target(path), _json_text(data))

    def write_generations(self, rows: Iterable[GenerationRow]) -> Path:
        return self._write_lines(self.generations, rows)

    def write_samples(self, rows: Iterable[SampleRow]) -> Path:
        return self._write_lines(self.samples, rows)

    def _write_lines(self, path: Path, rows: Iterable[GenerationRow | SampleRow]) -> Path:
        """A JSON-lines file, one row's ``to_dict`` per line, written whole or not at all."""
        from mlmh.plugins.contracts import finite_only, strict_json

        def write(handle: IO[bytes]) -> None:
            for row in rows:  # strict, as every run file is: a NaN (a metric's per-sample value) is written null
                line = strict_json(finite_only(row.to_dict())[0], ensure_ascii=False)
                handle.write((line + "\n").encode("utf-8"))

        return write_atomic(self._target(path), write)

    def write_text(self, path: Path, text: str) -> Path:
        return write_text_atomic(self._target(path), text)

    def write_with(self, path: Path, write: Callable[[IO[bytes]], Any]) -> Path:
        """``path`` filled by ``write(handle)`` (a figure's savefig, a CSV writer), atomically."""
        return write_atomic(self._target(path), write)

    def write_config(self, record: dict[str, Any]) -> Path:
        return self.write_json(self.config, record)

    def write_results(self, results: Any) -> Path:
        """results.json: the serialisation (``to_dict``) of a RunResults, the last file a run writes."""
        return self.write_json(self.results, results.to_dict())


def new_run_path(preset: str, root: str | Path = RUNS_ROOT) -> Path:
    """Where a new run of ``preset`` lives when no path is given: ``runs/<UTC timestamp>-<preset>``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path(root) / f"{stamp}-{preset}"


def latest_unfinished(preset: str, root: str | Path = RUNS_ROOT) -> Path | None:
    """The newest unfinished run directory of ``preset`` (what ``--resume`` picks without a path)."""
    root = Path(root)
    if not root.is_dir():
        return None
    runs = sorted(p for p in root.glob(f"*-{preset}") if RunDir(p).unfinished)
    return runs[-1] if runs else None
