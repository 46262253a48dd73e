"""WordNet for METEOR without a network.

NLTK's METEOR needs the ``wordnet`` corpus. In order of preference we use: NLTK data already
installed; ``nltk.download('wordnet')`` when a network answers within a short timeout; or an NLTK
``corpora/wordnet`` directory assembled under the mlmh cache from Debian's ``wordnet-base`` and
``wordnet-sense-index`` files (installed with apt-get when running as root). The Debian packages ship
the WordNet 3.0 database files NLTK reads, except ``lexnames``, which we write ourselves.

Run time (scoring) never downloads or installs: it only uses data present or assembles from local files;
``mlmh doctor --fix`` (:func:`ensure_wordnet`) may download or install.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

from mlmh.doctor import CheckResult, check
from mlmh.errors import MlmhError

DEBIAN_DIR = Path("/usr/share/wordnet")
DEBIAN_PACKAGES = ("wordnet-base", "wordnet-sense-index")
_POS = ("noun", "verb", "adj", "adv")
#: Files of the WordNet 3.0 database NLTK's reader opens (index.sense comes from wordnet-sense-index).
DATABASE_FILES = (
    *(f"index.{p}" for p in _POS),
    *(f"data.{p}" for p in _POS),
    *(f"{p}.exc" for p in _POS),
    "index.sense",
)
OPTIONAL_FILES = ("cntlist.rev", "sents.vrb", "sentidx.vrb", "frames.vrb")

#: The 45 lexicographer files of WordNet 3.0, numbered 00-44 (see lexnames(5WN)); the second number is
#: the syntactic category (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change",
    "verb.cognition", "verb.communication", "verb.competition", "verb.consumption", "verb.contact",
    "verb.creation", "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social",
    "verb.stative", "verb.weather", "adj.ppl",
)
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
NLTK_DOWNLOAD_HOST = ("raw.githubusercontent.com", 443)


def nltk_data_dir() -> Path:
    """Where mlmh keeps NLTK data: ``<cache>/nltk_data``."""
    from mlmh.machine.paths import cache_dir

    return cache_dir() / "nltk_data"


def register_data_path() -> Path:
    """Put mlmh's NLTK data directory on ``nltk.data.path`` (first, so an assembled copy wins)."""
    import nltk

    path = str(nltk_data_dir())
    if path not in nltk.data.path:
        nltk.data.path.insert(0, path)
    return Path(path)


def lexnames_text() -> str:
    """The ``lexnames`` file NLTK's reader expects: ``NN<TAB>name<TAB>category`` per line."""
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def find_wordnet() -> str | None:
    """Where NLTK finds the wordnet corpus (after adding mlmh's directory), or None.

    mlmh's own directory comes first on NLTK's path, so a corpus assembled there is the answer without
    importing nltk (a second a run; a warm run scores nothing and needs only this answer).
    """
    assembled = nltk_data_dir() / "corpora" / "wordnet"
    if assembled.is_dir():
        return str(assembled)
    import nltk

    register_data_path()
    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            return str(nltk.data.find(resource))
        except LookupError:
            continue
    return None


def debian_files_present(source: Path | None = None) -> bool:
    source = source or DEBIAN_DIR
    return all((source / name).is_file() for name in DATABASE_FILES)


def assemble_from_debian(source: Path | None = None, data_dir: Path | None = None) -> Path:
    """Build ``<data_dir>/corpora/wordnet`` from the Debian WordNet files plus our ``lexnames``."""
    source = source or DEBIAN_DIR
    data_dir = data_dir or nltk_data_dir()
    missing = [name for name in DATABASE_FILES if not (source / name).is_file()]
    if missing:
        raise MlmhError(
            f"WordNet files missing under {source}: {', '.join(missing)} "
            f"(install: apt-get install {' '.join(DEBIAN_PACKAGES)})"
        )
    target = data_dir / "corpora" / "wordnet"
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the target and rename, so a concurrent reader never sees half a corpus.
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    try:
        for name in DATABASE_FILES + OPTIONAL_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, staging / name)
        (staging / "lexnames").write_text(lexnames_text(), encoding="ascii")
        (staging / "SOURCE").write_text(f"assembled by mlmh from Debian {', '.join(DEBIAN_PACKAGES)} at {source}\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def verify_wordnet() -> Any:
    """The loaded NLTK wordnet reader, checked with ``synsets('dog')``; raises MlmhError if unusable."""
    register_data_path()
    from nltk.corpus import wordnet

    try:
        with warnings.catch_warnings():  # "multilingual functions are not available": we only need English
            warnings.filterwarnings("ignore", message=".*multilingual functions.*")
            synsets = wordnet.synsets("dog")
    except (LookupError, OSError, AssertionError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        raise MlmhError(f"NLTK WordNet is not usable: {first[0] if first else type(exc).__name__}") from None
    if not synsets:
        raise MlmhError("NLTK WordNet loaded but has no synsets for 'dog'; the corpus is damaged")
    return wordnet


def network_reachable(host: tuple[str, int] = NLTK_DOWNLOAD_HOST, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection(host, timeout=timeout):
            return True
    except OSError:
        return False


def install_debian_packages() -> str:
    """``apt-get install`` the WordNet packages (root only); returns what happened."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise MlmhError(
            f"WordNet files not under {DEBIAN_DIR}; run as root: apt-get install {' '.join(DEBIAN_PACKAGES)}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *DEBIAN_PACKAGES]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise MlmhError(f"apt-get install {' '.join(DEBIAN_PACKAGES)} failed: {tail[0]}")
    return f"installed Debian packages {', '.join(DEBIAN_PACKAGES)}"


def ensure_wordnet(*, allow_download: bool = True, allow_install: bool = True) -> str:
    """Make NLTK's wordnet usable by whatever route works here; returns a one-line account.

    Order: already present -> nltk.download (network reachable) -> assemble from Debian files
    (installing them with apt-get when allowed and running as root). Raises MlmhError if none works.
    """
    if find_wordnet():
        verify_wordnet()
        return f"WordNet present at {find_wordnet()}"
    if allow_download and network_reachable():
        import nltk

        if nltk.download("wordnet", download_dir=str(register_data_path()), quiet=True, raise_on_error=False):
            if find_wordnet():
                verify_wordnet()
                return f"WordNet downloaded by NLTK into {nltk_data_dir()}"
    steps = []
    if not debian_files_present():
        if not allow_install:
            raise MlmhError(
                f"WordNet not found: no NLTK data and no Debian files under {DEBIAN_DIR} "
                f"(fix: mlmh doctor --fix, or apt-get install {' '.join(DEBIAN_PACKAGES)})"
            )
        steps.append(install_debian_packages())
    target = assemble_from_debian()
    verify_wordnet()
    steps.append(f"assembled NLTK WordNet at {target} from {DEBIAN_DIR}")
    return "; ".join(steps)


_READERS: dict[str, Any] = {}


def _reader_class() -> type:
    from nltk.corpus.reader import WordNetCorpusReader

    class EnglishWordNetReader(WordNetCorpusReader):
        """NLTK's reader without the WordNet-3.0-to-itself sense map it builds on load.

        ``map_wn('wordnet')`` maps the default corpus (WordNet 3.0) onto the loaded one for the
        multilingual (OMW) functions; for 3.0 data that map is the identity, yet NLTK builds it by
        reading ``index.sense`` twice, about 60% of the load time. METEOR needs English synsets only.
        """

        def map_wn(self, version: str = "wordnet") -> Any:
            if version == "wordnet" and self.get_version() == "3.0":
                return None
            return super().map_wn(version)

    return EnglishWordNetReader


def wordnet_for_scoring() -> Any:
    """The wordnet reader METEOR uses (one per process): present data, or assembled from local
    Debian files; never downloads or installs. Raises MlmhError with the fix when neither exists."""
    register_data_path()  # NLTK's readers refuse a directory outside its data path
    where = find_wordnet()
    if not where:
        ensure_wordnet(allow_download=False, allow_install=False)
        where = find_wordnet()
    if where is None:
        raise MlmhError("NLTK WordNet not found after assembly")
    if where not in _READERS:
        if where.endswith(".zip"):  # a zipped download: let NLTK's own loader handle it
            _READERS[where] = verify_wordnet()
        else:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*multilingual functions.*")
                try:
                    reader = _reader_class()(where, None)
                except (OSError, AssertionError, ValueError) as exc:
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise MlmhError(f"NLTK WordNet at {where} is not usable: {first}") from None
            if not reader.synsets("dog"):
                raise MlmhError(f"NLTK WordNet at {where} has no synsets for 'dog'; the corpus is damaged")
            _READERS[where] = reader
    return _READERS[where]


def _fix_wordnet() -> str:
    return ensure_wordnet()


@check("WordNet (METEOR)", fixer=_fix_wordnet)
def _wordnet_check() -> CheckResult:
    where = find_wordnet()
    if where:
        return CheckResult("WordNet (METEOR)", True, f"NLTK wordnet at {where}")
    if debian_files_present():
        return CheckResult(
            "WordNet (METEOR)", False,
            f"no NLTK wordnet yet; Debian files under {DEBIAN_DIR} (METEOR assembles them on first use)",
            "mlmh doctor --fix (assembles it now)",
        )
    return CheckResult(
        "WordNet (METEOR)", False, "no NLTK wordnet and no Debian WordNet files; METEOR will be skipped",
        f"mlmh doctor --fix (downloads, or as root installs {' '.join(DEBIAN_PACKAGES)})",
    )


def wordnet_unavailable() -> str | None:
    """Why a component that needs WordNet cannot run here, or None when it can: WordNet data present, or
    the Debian files :func:`wordnet_for_scoring` assembles it from (the ``unavailable`` hook's answer)."""
    if find_wordnet() or debian_files_present():
        return None
    return (f"needs WordNet: no NLTK wordnet data and no Debian WordNet files under {DEBIAN_DIR} "
            f"(fix: mlmh doctor --fix, or apt-get install {' '.join(DEBIAN_PACKAGES)})")
