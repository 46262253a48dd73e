"""Official-format dataset files built from real English prose that nobody on this project wrote.

The prose is what every test machine already holds offline: the package descriptions of Debian's
``/var/lib/dpkg/status`` (author = the ``Maintainer:``, tag = the ``Section:``) and the summaries and
descriptions of the installed Python distributions (author = their author, tags = their ``Topic ::``
classifiers). Each builder is deterministic on one machine and takes a size argument.

Two other kinds of prose are the held-out corpora. The running-prose docstrings of the Python standard library's own
source (author = the top-level module or package, ``email``, ``http``, ``asyncio``: ``pan-stdlib``) judged the
recipe chosen on the package descriptions out of sample, and so became a development corpus once it fell short
there. The DESCRIPTION sections of the installed manual pages (author = the Debian package that installed the page:
``pan-man``) are held out of every setting chosen on either, and judged the recipe chosen on both. The running prose of
the installed GNU Info manuals (author and tag = the manual: ``mpst-info``) is held out of every setting chosen on
those three, the Rust books that rustup installs (author = a chapter: ``pan-rust``) of every setting chosen on
those four, and CMake's documentation (author = a page: ``pan-cmake``) of every setting chosen on those five.

By hand: ``python tests/realdata.py pan|pan-stdlib|pan-man|pan-rust|pan-cmake|mpst|mpst-info|mimic|text-jsonl|... OUTDIR [SIZE]``.
"""

from __future__ import annotations

import ast
import csv
import inspect
import json
import re
import sys
import sysconfig
import uuid
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib import metadata
from pathlib import Path
from typing import Iterable

DPKG_STATUS = Path("/var/lib/dpkg/status")
MIN_WORDS, MAX_WORDS = 40, 160
_NAMESPACE = uuid.UUID("5b0c7f0e-2d1c-4b9e-9a57-3f0a51d2e001")


@dataclass(frozen=True)
class Prose:
    """One real text with who wrote it and what it is about."""

    name: str
    author: str
    text: str
    tags: tuple[str, ...]
    source: str  # "dpkg", "python-metadata" or "stdlib-docstring"
    family: str = ""  # Debian's source package: its binary packages (libfoo, libfoo-dev) share one description


def _clip(text: str) -> str:
    """Whitespace-normalised ``text`` cut to at most MAX_WORDS words, ending at a sentence when it can."""
    words = text.split()
    clipped = " ".join(words[:MAX_WORDS])
    if len(words) > MAX_WORDS and "." in clipped[len(clipped) // 2:]:
        clipped = clipped[: clipped.rindex(".") + 1]
    return clipped


def dpkg_prose(status: Path = DPKG_STATUS) -> list[Prose]:
    """Package descriptions from a dpkg status file (synopsis + long description, paragraphs joined)."""
    if not status.is_file():
        return []
    found = []
    for stanza in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields: dict[str, str] = {}
        key = None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line[1:]
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Description" not in fields or "Maintainer" not in fields:
            continue
        synopsis, _, body = fields["Description"].partition("\n")
        paragraphs = [" ".join(line for line in block.splitlines() if line.strip() != ".") for block in re.split(r"\n\.\s*(?:\n|$)", body)]
        text = " ".join([synopsis.rstrip(".") + "."] + [p for p in paragraphs if p.strip()])
        author = fields["Maintainer"].split("<")[0].strip()
        found.append(Prose(fields.get("Package", "?"), author, text, (fields.get("Section", "misc").split("/")[-1], fields.get("Priority", "optional")), "dpkg",
                           fields.get("Source", fields.get("Package", "?")).split()[0]))
    return found


def python_prose() -> list[Prose]:
    """Summaries and plain-text descriptions of the installed Python distributions."""
    found = []
    for dist in metadata.distributions():
        meta = dist.metadata
        author = (meta.get("Author") or meta.get("Author-email") or meta.get("Maintainer") or "").split("<")[0].strip()
        summary = (meta.get("Summary") or "").strip()
        body = meta.get_payload() or meta.get("Description") or ""
        prose_lines = [line for line in body.splitlines() if re.match(r"^[A-Za-z].*[a-z,.]$", line.strip()) and "http" not in line]
        topics = tuple(sorted({c.split("::")[1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("Topic ::") and "::" in c[8:]}))
        if author and summary:
            found.append(Prose(meta.get("Name") or "?", author, " ".join([summary.rstrip(".") + "."] + prose_lines), topics or ("Software",), "python-metadata"))
    return found


#: a text sharing a run of this many words with a text already kept is a near-duplicate (Lee et al. 2022's
#: ExactSubstr threshold, 50 tokens): Debian's libfoo, libfoo-dev and libfoo-doc repeat one long description
NEAR_DUPLICATE_WORDS = 50


def word_runs(text: str) -> set[tuple[str, ...]]:
    """Every run of NEAR_DUPLICATE_WORDS consecutive words of ``text`` (the whole text where it is shorter)."""
    words = text.split()
    return {tuple(words[i:i + NEAR_DUPLICATE_WORDS]) for i in range(len(words) - NEAR_DUPLICATE_WORDS + 1)} or {tuple(words)}


def real_prose(with_python: bool = False) -> list[Prose]:
    """Every usable text (MIN_WORDS words at least, clipped, duplicates and near-duplicates dropped: one text per
    Debian source package, none sharing a NEAR_DUPLICATE_WORDS-word run with another) grouped by
    author in a fixed order: Debian's descriptions (edited prose), and the Python distributions' only where dpkg
    has too few (or ``with_python``). Near-duplicates would be one text trained on several times, scored as memorised."""
    packages = dpkg_prose()
    kept = _distinct(packages if len(packages) >= 60 and not with_python else packages + python_prose())
    if len(kept) < 8:
        raise RuntimeError(f"only {len(kept)} real texts found in {DPKG_STATUS} and the installed Python distributions")
    return kept


def _distinct(candidates: list[Prose]) -> list[Prose]:
    """``candidates`` by author and name, clipped, without short texts, near-duplicates and a family's second text."""
    runs: set[tuple[str, ...]] = set()
    families: set[str] = set()
    kept = []
    for prose in sorted(candidates, key=lambda p: (p.author, p.name)):
        text = _clip(prose.text)
        shingles = word_runs(text)
        if len(text.split()) >= MIN_WORDS and not shingles & runs and (not prose.family or prose.family not in families):
            runs |= shingles
            families.add(prose.family)
            kept.append(Prose(prose.name, prose.author, text, prose.tags, prose.source, prose.family))
    return kept


#: the standard library's folders that are not its documented modules: tests, the IDLE application, demos, installers
#: and the places third-party packages go (their prose is Python distribution metadata's kind, a development corpus's)
STDLIB_SKIP = frozenset({"test", "tests", "idlelib", "lib2to3", "turtledemo", "ensurepip", "distutils", "pydoc_data",
                         "site-packages", "dist-packages", "this", "antigravity"})
#: a docstring line that is not running prose: a doctest or its continuation, an indented block (code, an argument
#: list), a reST literal block or underline, a list item, a section heading ("Args:"), an assignment or braces
_NOT_PROSE = re.compile(r">>>|^\.\.\.|::$|^\s|^[-*+\u2022] |^\d+[.)] |^[\w ]+:$|^[-=~^]{3,}$|[{};]| = |^\w+ -- |^:\w+")


def docstring_prose(doc: str) -> str:
    """The running prose a docstring opens with: its paragraphs up to the first that is not prose (a doctest, code,
    a list, a heading) or that would take it past MAX_WORDS words, whitespace-normalised; "" where none."""
    kept: list[str] = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines = [line.rstrip() for line in block.splitlines() if line.strip()]
        paragraph = " ".join(block.split())
        if not lines:
            continue
        if any(_NOT_PROSE.search(line) for line in lines) or not (paragraph[0].isupper() and paragraph[-1] in ".!?"):
            break
        if len(" ".join(kept + [paragraph]).split()) > MAX_WORDS:
            break
        kept.append(paragraph)
    return " ".join(kept)


def stdlib_prose(root: Path | None = None) -> list[Prose]:
    """Docstrings of the standard library's modules, classes and functions, read from its source with ``ast``
    (nothing imported), whose running prose has MIN_WORDS to MAX_WORDS words: author = the top-level module or
    package, tags = (the module, what the docstring documents), family = the author and the documented name (a
    method overridden with the same docstring, a package's many ``__init__``, counts once); near-duplicates dropped."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0].startswith(("_", "config-")) or STDLIB_SKIP & set(parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        nodes = [tree] + [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        for node in nodes:
            doc = ast.get_docstring(node, clean=False)
            text = docstring_prose(doc) if doc else ""
            if len(text.split()) >= MIN_WORDS:
                name = getattr(node, "name", "")
                kind = "module" if not name else "class" if isinstance(node, ast.ClassDef) else "function"
                found.append(Prose(f"{module}.{name}" if name else module, parts[0], text,
                                   (module, kind), "stdlib-docstring", f"{parts[0]}:{name or module}"))
    kept = _distinct(found)
    if len(kept) < 8:
        raise RuntimeError(f"only {len(kept)} docstrings of running prose found in {root}")
    return kept


MAN_ROOT = Path("/usr/share/man")
DPKG_INFO = Path("/var/lib/dpkg/info")
#: the manual's sections of commands, file formats and administration: prose about programs, not library calls
MAN_SECTIONS = ("man1", "man5", "man8")
#: roff escapes that stand for a character, and the escapes that only change the font or spacing
_ROFF_CHARS = {r"\-": "-", r"\(em": "-", r"\(en": "-", r"\(lq": '"', r"\(rq": '"', r"\(aq": "'", r"\(oq": "'",
               r"\(cq": "'", r"\e": "\\", r"\ ": " ", r"\~": " ", r"\(co": "(c)", r"\*(lq": '"', r"\*(rq": '"',
               r"\(bu": "*", r"\(dq": '"'}
_ROFF_DROP = re.compile(r"\\f(\(..|\[[^]]*\]|.)|\\s[-+]?\d|\\[&|^%:c]|\\\*\(?\w+")
#: a request that ends running prose (a tagged or indented list, an example, a table, a relative indent)
_ROFF_BLOCK = re.compile(r"^\.(TP|IP|HP|RS|nf|EX|TS|in|ta|SS|SH|Bl|Bd|It|TQ|UR|MT|de)\b")
#: font requests whose arguments are text, alternating fonts as they go
_ROFF_FONT = re.compile(r"^\.(B|I|SM|SB|BR|RB|IR|RI|BI|IB)\s+(.*)$")


def man_packages(info: Path = DPKG_INFO) -> dict[str, str]:
    """Manual page path -> the Debian package that installed it, from dpkg's file lists."""
    owner = {}
    for listing in sorted(info.glob("*.list")):
        package = listing.stem.split(":")[0]
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(str(MAN_ROOT) + "/man") and line.endswith(".gz"):
                owner[line] = package
    return owner


def roff_description(source: str) -> str:
    """The running prose a manual page's DESCRIPTION section opens with, as text: its paragraphs up to the first
    list, example or table (or one that would pass MAX_WORDS words), fonts and escapes resolved; "" where none."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r'^\.SH\s+"?DESCRIPTION"?\s*$', line)), None)
    if start is None:
        return ""
    paragraphs: list[list[str]] = [[]]
    for line in lines[start + 1:]:
        if line.startswith(('.\\"', "'\\\"", '\\"')):
            continue
        if _ROFF_BLOCK.match(line):
            break
        if re.match(r"^\.(PP|P|LP|sp|br)\b", line) or not line.strip():
            paragraphs.append([])
            continue
        font = _ROFF_FONT.match(line)
        if font:
            words = [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', font.group(2))]
            line = " ".join(words) if font.group(1) in ("B", "I", "SM", "SB") else "".join(words)  # BR etc. alternate
        elif line.startswith((".", "'")):
            continue
        paragraphs[-1].append(line)
    kept: list[str] = []
    for lines_ in paragraphs:
        paragraph = _ROFF_DROP.sub("", " ".join(lines_))
        for escape, char in _ROFF_CHARS.items():
            paragraph = paragraph.replace(escape, char)
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if "\\" in paragraph or not (paragraph[0].isalnum() and paragraph[-1] in ".!?"):  # "prog copies ..."
            break
        if len(" ".join(kept + [paragraph]).split()) > MAX_WORDS:
            break
        kept.append(paragraph)
    return " ".join(kept)


def man_prose(root: Path = MAN_ROOT, info: Path = DPKG_INFO) -> list[Prose]:
    """The DESCRIPTION sections of the installed manual pages of commands, file formats and administration (English
    only, read with gzip, nothing run): author = the Debian package that installed the page, tags = (the section,
    the page), family = the author and the page's name (a page installed twice counts once); near-duplicates dropped."""
    import gzip

    owner = man_packages(info)
    found = []
    for section in MAN_SECTIONS:
        for path in sorted((root / section).glob("*.gz")):
            package = owner.get(str(path))
            if package is None or path.is_symlink():
                continue
            try:
                text = roff_description(gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace"))
            except (OSError, EOFError):
                continue
            if len(text.split()) >= MIN_WORDS:
                page = path.name.removesuffix(".gz")
                found.append(Prose(page, package, text, (section, page), "man-page", f"{package}:{page.split('.')[0]}"))
    kept = _distinct(found)
    if len(kept) < 8:
        raise RuntimeError(f"only {len(kept)} manual pages with a DESCRIPTION of running prose found under {root}")
    return kept


INFO_ROOT = Path("/usr/share/info")
#: the licence and colophon every manual repeats, nobody's prose of their own
_BOILERPLATE = re.compile(r"makeinfo|Copyright|Permission is granted|Free Documentation License|Free Software Foundation")


def info_paragraphs(text: str) -> list[list[str]]:
    """Runs of consecutive prose paragraphs per node of one Info manual: a paragraph of unindented lines (its first
    may be indented three spaces, as Info indents a paragraph) that opens with a letter and ends a sentence; an
    example, a table, a menu, a heading or a definition's term ends the run."""
    return [run for node in text.split("\x1f") for run in prose_runs(map(_info_paragraph, re.split(r"\n[ \t]*\n", node)))]


def _info_paragraph(block: str) -> str | None:
    """One block of an Info node as running prose (whitespace-normalised), or None where it is not prose."""
    lines = block.strip("\n").splitlines()
    first = lines[0] if lines else ""
    prose = (bool(lines) and re.match(r"^(   )?[A-Za-z‘]", first) is not None
             and all(line[:1] not in (" ", "\t", "*", "=", "-") for line in lines[1:])
             and not first.startswith(("File:", "Tag Table", "Indirect:", "*"))
             and block.strip().endswith(".") and "\b" not in block and not _BOILERPLATE.search(block))
    return " ".join(" ".join(lines).split()) if prose else None


def prose_runs(paragraphs: Iterable[str | None]) -> list[list[str]]:
    """The runs of consecutive prose paragraphs in ``paragraphs``, where None stands for a block that is not prose and
    ends the run before it."""
    runs: list[list[str]] = []
    run: list[str] = []
    for paragraph in [*paragraphs, None]:
        if paragraph is not None:
            run.append(paragraph)
        elif run:
            runs.append(run)
            run = []
    return runs


def joined_paragraphs(run: list[str]) -> list[str]:
    """A run of consecutive paragraphs joined, in order, into texts of MIN_WORDS to MAX_WORDS words: a paragraph joins
    the text before it while the two fit MAX_WORDS; a paragraph longer than MAX_WORDS by itself is dropped."""
    texts: list[str] = []
    current: list[str] = []
    for paragraph in run + [""]:
        if paragraph and len(" ".join(current + [paragraph]).split()) <= MAX_WORDS:
            current.append(paragraph)
            continue
        if len(" ".join(current).split()) >= MIN_WORDS:
            texts.append(" ".join(current))
        current = [paragraph] if paragraph and len(paragraph.split()) <= MAX_WORDS else []
    return texts


def info_prose(root: Path = INFO_ROOT) -> list[Prose]:
    """The running prose of the installed GNU Info manuals (coreutils, sed, find, wget, ...; read with gzip): runs of
    consecutive prose paragraphs joined into texts of MIN_WORDS to MAX_WORDS words; author = the manual, tags = (the
    manual,); near-duplicates dropped. A fifth kind of real prose, held out of every setting chosen before it."""
    import gzip

    found = []
    for path in sorted(root.glob("*.info*.gz")):
        manual = path.name.split(".info")[0]
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        for run in info_paragraphs(text):
            for joined in joined_paragraphs(run):
                name = f"{manual}:{len(found)}"
                found.append(Prose(name, manual, joined, (manual,), "info-manual", name))
    return distinct_running_prose(found, f"the Info manuals under {root}")


#: the installed Rust toolchain's books (rustup puts them beside the compiler): running prose by the Rust project's authors
RUST_DOCS = Path.home() / ".rustup" / "toolchains"
#: the books of running prose; rust-by-example, the unstable book and the error index are mostly code and short notes
RUST_BOOKS = ("book", "nomicon", "reference", "edition-guide", "embedded-book", "cargo", "rustc", "rustdoc", "style-guide")


class _HtmlParagraphs(HTMLParser):
    """The ``<p>`` paragraphs of an mdBook page's ``<main>``, each with the share of its characters inside ``<code>``;
    a paragraph inside a list, table, block quote or note box is not running prose and is skipped."""

    SKIP = frozenset({"li", "table", "blockquote", "pre", "aside", "section"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[tuple[str, float]] = []
        self.main = self.skip = self.code = 0
        self.text: list[str] | None = None
        self.code_chars = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.main += tag == "main"
        self.skip += tag in self.SKIP
        self.code += tag == "code"
        if tag == "p" and self.main and not self.skip:
            self.text, self.code_chars = [], 0

    def handle_endtag(self, tag: str) -> None:
        self.main -= tag == "main" and self.main > 0
        self.skip -= tag in self.SKIP and self.skip > 0
        self.code -= tag == "code" and self.code > 0
        if tag == "p" and self.text is not None:
            text = " ".join("".join(self.text).split())
            self.paragraphs.append((text, self.code_chars / max(len(text), 1)))
            self.text = None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)
            self.code_chars += len(data) if self.code else 0


def html_paragraphs(html: str) -> list[str]:
    """The running-prose paragraphs of one mdBook page: ``<p>`` elements of its ``<main>`` outside lists, tables, quotes
    and notes, that end a sentence and hold at most a fifth of their characters in inline code."""
    parser = _HtmlParagraphs()
    parser.feed(html)
    return [text for text, code in parser.paragraphs if text.endswith(".") and code <= 0.2 and text[:1].isalpha()]


def rust_prose(root: Path = RUST_DOCS) -> list[Prose]:
    """The running prose of the Rust project's books that rustup installs with a toolchain (The Rust Programming
    Language, the Rustonomicon, the Reference, Cargo's and rustc's books, ...; the first toolchain's, by name): each
    chapter's consecutive paragraphs joined into texts of MIN_WORDS to MAX_WORDS words; author = the chapter (a page
    of one book), tags = (the book, the chapter); near-duplicates dropped. A sixth kind of real prose, held out of every
    setting chosen before it."""
    html = next((d for d in sorted(root.glob("*/share/doc/rust/html")) if (d / "book").is_dir()), None)
    found: list[Prose] = []
    for book in RUST_BOOKS if html is not None else ():
        for path in sorted((html / book).rglob("*.html")):
            page = path.relative_to(html / book).with_suffix("").as_posix()
            if page in ("print", "index", "SUMMARY", "404", "toc") or "edition/" in page or page.startswith("first-edition"):
                continue  # the whole book on one page, a contents page, the old editions' redirects
            author = f"{book}/{page}"
            for joined in joined_paragraphs(html_paragraphs(path.read_text(encoding="utf-8", errors="replace"))):
                name = f"{author}:{len(found)}"
                found.append(Prose(name, author, joined, (book, page), "rust-book", name))
    return distinct_running_prose(found, f"the Rust books under {root}")


#: the installed CMake's reference documentation: its manual's reStructuredText and the modules' documentation blocks
CMAKE_ROOTS = tuple(sorted(Path("/usr/share").glob("cmake-*")))
#: ``:role:`text <target>``` (a cross-reference; the text may hold ``<placeholders>``), ````literal````,
#: ```text <url>`_`` and ```Section`_`` (links), ```text``` (the default role), ``*emphasis*``
_RST_ROLE = re.compile(r":[\w:+-]+:`~?([^`]*?)(\s<[^`<>]*>)?`")
_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_LINK = re.compile(r"`([^`<]+?)(\s*<[^`]*>)?`__?")
_RST_DEFAULT_ROLE = re.compile(r"`([^`]+)`")
_RST_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")


def rst_text(markup: str) -> tuple[str, int]:
    """A paragraph's reStructuredText as plain text, and how many of its characters were literals or cross-references."""
    code = sum(len(m.group(1)) for pattern in (_RST_LITERAL, _RST_ROLE) for m in pattern.finditer(markup))
    for pattern in (_RST_LITERAL, _RST_ROLE, _RST_LINK, _RST_DEFAULT_ROLE, _RST_EMPHASIS):
        markup = pattern.sub(r"\1", markup)
    return markup, code


def rst_paragraphs(source: str) -> list[list[str]]:
    """Runs of consecutive running-prose paragraphs of one reStructuredText page, as plain text: a paragraph of unindented
    lines that opens with a letter (after its markup is read), ends a sentence and holds at most a fifth of its characters
    in literals and cross-references; a directive, a list, a heading, an indented block or code ends the run."""
    return prose_runs(map(_rst_paragraph, re.split(r"\n[ \t]*\n", source)))


def _rst_paragraph(block: str) -> str | None:
    """One block of a reStructuredText page as plain running prose, or None where it is not prose."""
    lines = block.strip("\n").splitlines()
    joined = " ".join(" ".join(lines).split())
    text, literal = rst_text(joined)
    prose = (bool(lines) and all(line[:1] not in (" ", "\t") for line in lines)
             and not re.match(r"^(\.\.|[-*+#|] |\d+[.)] |[=~^\-*#]{3,})", lines[0])
             and not any(re.fullmatch(r"[=~^\-*#`]{3,}", line) for line in lines)
             and text[:1].isalpha() and text.endswith(".") and literal <= 0.2 * len(text) and "::" not in joined)
    return text if prose else None


def cmake_pages(root: Path) -> list[tuple[str, str]]:
    """(section/name, reStructuredText) of every page of one CMake installation's documentation: ``Help/<section>/*.rst``
    and the ``.rst:`` blocks of ``Modules/*.cmake`` (where the modules keep their documentation; section ``module``)."""
    pages = [(f"{path.parent.name}/{path.stem}", path.read_text(encoding="utf-8", errors="replace"))
             for path in sorted((root / "Help").glob("*/*.rst")) if path.parent.name != "release"]
    for path in sorted((root / "Modules").glob("*.cmake")):
        blocks = re.findall(r"#\[(=*)\[\.rst:\n(.*?)\n#?\]\1\]", path.read_text(encoding="utf-8", errors="replace"), re.S)
        if blocks:
            pages.append((f"module/{path.stem}", "\n\n".join(body for _, body in blocks)))
    return pages


def cmake_prose(roots: tuple[Path, ...] = CMAKE_ROOTS) -> list[Prose]:
    """The running prose of the installed CMake's documentation (commands, policies, properties, variables, the manuals,
    the modules; release notes left out, being lists): each page's consecutive paragraphs joined into texts of MIN_WORDS
    to MAX_WORDS words; author = the page, tags = (its section, the page); near-duplicates dropped. A seventh kind of
    real prose, held out of every setting chosen before it."""
    found: list[Prose] = []
    for page, source in cmake_pages(roots[0]) if roots else ():
        section = page.split("/")[0]
        for run in rst_paragraphs(source):
            for joined in joined_paragraphs(run):
                name = f"{page}:{len(found)}"
                found.append(Prose(name, page, joined, (section, page), "cmake-doc", name))
    return distinct_running_prose(found, f"CMake's documentation under {roots}")


def distinct_running_prose(found: list[Prose], where: str) -> list[Prose]:
    """``found`` without short texts and near-duplicates (:func:`_distinct`); an error naming ``where`` below 8 texts."""
    kept = _distinct(found)
    if len(kept) < 8:
        raise RuntimeError(f"only {len(kept)} texts of running prose found in {where}")
    return kept


def round_robin(prose: list[Prose]) -> list[Prose]:
    """One text of each author in turn, so the first rows mix authors and their tags."""
    groups = list(_by_author(prose).values())
    return [group[i] for i in range(max(map(len, groups))) for group in groups if i < len(group)]


def _by_author(prose: list[Prose]) -> dict[str, list[Prose]]:
    authors: dict[str, list[Prose]] = {}
    for item in prose:
        authors.setdefault(item.author, []).append(item)
    return authors


def pan_dir(tmp_path: Path, n_authors: int = 8, prose: list[Prose] | None = None, folder: str = "pan") -> Path:
    """PAN authorship verification (``pairs.jsonl`` + ``truth.jsonl``) from ``n_authors`` real authors.

    Authors with two texts or more come in couples (A, B) giving three pairs each: A-A and B-B (same) and A-B
    (different), so each couple is one author group of the loader's open, author-disjoint split; an author with
    two texts gives one of them to two pairs, as PAN's releases reuse texts. Where too few authors have two texts,
    the rest come as couples of one text each, one different-author pair per couple. Author ids are PAN-like numbers.
    The texts are :func:`real_prose`'s, or ``prose`` where given; the files go to ``tmp_path / folder``.
    """
    if n_authors < 4 or n_authors % 2:
        raise ValueError(f"n_authors must be an even number >= 4, got {n_authors}")
    by_author = _by_author(real_prose() if prose is None else prose)
    if prose is None and sum(len(texts) >= 2 for texts in by_author.values()) < n_authors:  # Debian's maintainers alone are too few
        by_author = _by_author(real_prose(with_python=True))
    prolific = [(a, texts) for a, texts in by_author.items() if len(texts) >= 2][:n_authors]
    prolific = prolific[: len(prolific) // 2 * 2]  # whole couples
    single = [(a, texts) for a, texts in by_author.items() if len(texts) == 1][: n_authors - len(prolific)]
    if len(prolific) + len(single) < n_authors:
        raise RuntimeError(f"only {len(prolific) + len(single)} authors; asked for {n_authors}")
    author_id = {a: str(1_000_000 + i * 7919) for i, (a, _) in enumerate(prolific + single)}
    couples = [((ta[0], ta[1]), (tb[0], tb[1]), (ta[-1], tb[-1])) for (_, ta), (_, tb) in zip(prolific[::2], prolific[1::2])]
    couples += [((ta[0], tb[0]),) for (_, ta), (_, tb) in zip(single[::2], single[1::2])]
    out = Path(tmp_path) / folder
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as pairs, (out / "truth.jsonl").open("w", encoding="utf-8") as truth:
        for couple in couples:
            for first, second in couple:
                pair_id = str(uuid.uuid5(_NAMESPACE, first.name + "|" + second.name))
                pairs.write(json.dumps({"id": pair_id, "fandoms": [first.tags[0], second.tags[0]], "pair": [first.text, second.text]}) + "\n")
                authors = [author_id[first.author], author_id[second.author]]
                truth.write(json.dumps({"id": pair_id, "same": authors[0] == authors[1], "authors": authors}) + "\n")
    return out


def pan_stdlib_dir(tmp_path: Path, n_authors: int = 60) -> Path:
    """:func:`pan_dir` from :func:`stdlib_prose` into ``tmp_path / "pan-stdlib"``: official-format PAN of another kind
    of real prose (the standard library's docstrings) than the development corpora the project's settings were chosen on."""
    return pan_dir(tmp_path, n_authors, stdlib_prose(), "pan-stdlib")


def mpst_csv(tmp_path: Path, n: int = 20, prose: list[Prose] | None = None, folder: str = "mpst") -> Path:
    """``mpst_full_data.csv`` (imdb_id, title, plot_synopsis, tags, split, synopsis_source) in ``tmp_path / folder``
    from :func:`real_prose`'s texts (or ``prose``); MPST's split shares (about 64% train, 16% val, 20% test) by row."""
    rows = round_robin(real_prose() if prose is None else prose)[:n]
    if len(rows) < 5:
        raise ValueError(f"n must be >= 5 for a train and a test split, got {n}")
    out = Path(tmp_path) / folder
    out.mkdir(parents=True, exist_ok=True)
    path = out / "mpst_full_data.csv"
    splits = ("train", "test", "train", "val", "train", "train", "test", "train", "val", "train")
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["imdb_id", "title", "plot_synopsis", "tags", "split", "synopsis_source"])
        for i, prose in enumerate(rows):
            writer.writerow([f"tt{9_000_001 + i:07d}", prose.name, prose.text, ", ".join(prose.tags), splits[i % len(splits)], prose.source])
    return path


def mimic_dir(tmp_path: Path, n: int = 12) -> Path:
    """MIMIC-III ``NOTEEVENTS.csv`` with its official columns: ``n`` discharge summaries (CATEGORY
    "Discharge summary") and, as in the real table, a few notes of other categories the loader skips."""
    prose = round_robin(real_prose())[: n + 3]
    out = Path(tmp_path) / "mimic"
    out.mkdir(parents=True, exist_ok=True)
    columns = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY", "DESCRIPTION", "CGID", "ISERROR", "TEXT"]
    with (out / "NOTEEVENTS.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC)
        writer.writerow(columns)
        for i, item in enumerate(prose):
            discharge = i < n
            writer.writerow([174 + i * 3, 22 + i, 165315 + i * 11, f"2196-04-{1 + i % 28:02d}", "" if discharge else f"2196-04-{1 + i % 28:02d} 10:{i % 60:02d}:00",
                             "", "Discharge summary" if discharge else "Nursing/other", "Report", "", "", item.text])
    return out


def trained_entity_tagger(directory: Path) -> Path:
    """The offline entity tagger trained once into ``directory`` (tests copy it into each cache dir)."""
    from mlmh_builtins.offline_taggers import entity_tagger_key, entity_training_documents, train_entity_tagger

    documents = entity_training_documents()
    target = Path(directory) / f"entity-crf-{entity_tagger_key(documents)}.crfsuite"
    return target if target.is_file() else train_entity_tagger(documents, target)


def install_entity_tagger(model: Path, cache: Path) -> None:
    """Put a trained entity tagger where mlmh looks for it under the cache dir ``cache``."""
    import shutil

    (Path(cache) / "taggers").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, Path(cache) / "taggers" / model.name)


#: the files and folders the ``text`` dataset reads, by the name of their format
TEXT_FORMATS = ("jsonl", "csv", "tsv", "txt", "parquet", "save_to_disk")


def text_records(n: int = 48) -> list[dict[str, str]]:
    """``n`` real texts as rows of a user's corpus: id (the package name), text, author (the group) and section (a label), from
    authors with two texts or more (up to four each), so that a group split has groups to keep together."""
    several = [texts[:4] for texts in _by_author(real_prose()).values() if len(texts) >= 2]
    rows: list[Prose] = []
    for texts in several:
        rows += texts[: n - len(rows)]
    if len(rows) < n:
        raise RuntimeError(f"only {len(rows)} real texts; asked for {n}")
    return [{"id": p.name, "text": p.text, "author": p.author, "section": p.tags[0], "name": p.name} for p in rows]


def folder_name(author: str) -> str:
    """The subfolder an author's ``.txt`` files go to: the name with runs of other characters as one dash."""
    return re.sub(r"\W+", "-", author).strip("-")


def text_corpus(tmp_path: Path, fmt: str, n: int = 48) -> Path:
    """:func:`text_records` written as ``fmt`` (one of :data:`TEXT_FORMATS`) under ``tmp_path``: a file, a folder
    of ``.txt`` files with one subfolder per author, or a Hugging Face ``save_to_disk`` folder."""
    records = text_records(n)
    Path(tmp_path).mkdir(parents=True, exist_ok=True)
    out = Path(tmp_path) / f"corpus-{fmt}"
    if fmt == "jsonl":
        path = out.with_suffix(".jsonl")
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        return path
    if fmt in ("csv", "tsv"):
        path = out.with_suffix("." + fmt)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(records[0]), delimiter="," if fmt == "csv" else "\t")
            writer.writeheader()
            writer.writerows(records)
        return path
    if fmt == "txt":
        for record in records:
            folder = out / folder_name(record["author"])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{record['name']}.txt").write_text(record["text"] + "\n", encoding="utf-8")
        return out
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = out.with_suffix(".parquet")
        pq.write_table(pa.Table.from_pylist(records), path)
        return path
    if fmt == "save_to_disk":
        from datasets import Dataset

        Dataset.from_list(records).save_to_disk(str(out))
        return out
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(TEXT_FORMATS)}")


def pan_man_dir(tmp_path: Path, n_authors: int = 60) -> Path:
    """:func:`pan_dir` from :func:`man_prose` into ``tmp_path / "pan-man"``: official-format PAN of a third kind of
    real prose (the manual pages' descriptions), held out of every setting chosen on the package descriptions and on
    the standard library's docstrings."""
    return pan_dir(tmp_path, n_authors, man_prose(), "pan-man")


def mpst_info_csv(tmp_path: Path, n: int = 300) -> Path:
    """:func:`mpst_csv` from :func:`info_prose` into ``tmp_path / "mpst-info"``: official-format MPST of a fifth kind of
    real prose (the GNU Info manuals' paragraphs, tagged by their manual), held out of every setting chosen on the
    package descriptions, the docstrings and the manual pages."""
    return mpst_csv(tmp_path, n, info_prose(), "mpst-info")


def pan_rust_dir(tmp_path: Path, n_authors: int = 60) -> Path:
    """:func:`pan_dir` from :func:`rust_prose` into ``tmp_path / "pan-rust"``: official-format PAN of a sixth kind of
    real prose (the Rust books' chapters as authors, taken from the books in turn), held out of every setting chosen on the
    five kinds before it."""
    return pan_dir(tmp_path, n_authors, shelves_in_turn(rust_prose()), "pan-rust")


def pan_cmake_dir(tmp_path: Path, n_authors: int = 120) -> Path:
    """:func:`pan_dir` from :func:`cmake_prose` into ``tmp_path / "pan-cmake"``: official-format PAN of a seventh kind of
    real prose (CMake's documentation pages as authors, taken from its sections in turn), held out of every setting
    chosen on the six kinds before it."""
    return pan_dir(tmp_path, n_authors, shelves_in_turn(cmake_prose()), "pan-cmake")


def shelves_in_turn(prose: list[Prose]) -> list[Prose]:
    """``prose`` with its authors taken from their shelves (``tags[0]``: a book, a section) in turn, each author's texts
    together, so the first authors :func:`pan_dir` picks span every shelf."""
    shelves: dict[str, list[list[Prose]]] = {}
    for texts in _by_author(prose).values():
        shelves.setdefault(texts[0].tags[0], []).append(texts)
    rows = list(shelves.values())
    return [text for i in range(max(map(len, rows))) for shelf in rows if i < len(shelf) for text in shelf[i]]


BUILDERS = {"pan": pan_dir, "pan-stdlib": pan_stdlib_dir, "pan-man": pan_man_dir, "mpst": mpst_csv,
            "mpst-info": mpst_info_csv, "pan-rust": pan_rust_dir, "pan-cmake": pan_cmake_dir, "mimic": mimic_dir, **{f"text-{fmt}": (lambda out, n=48, fmt=fmt: text_corpus(out, fmt, n)) for fmt in TEXT_FORMATS}}

if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in BUILDERS:
        sys.exit(f"usage: python {sys.argv[0]} {'|'.join(BUILDERS)} OUTDIR [SIZE]")
    size = (int(sys.argv[3]),) if len(sys.argv) == 4 else ()
    print(BUILDERS[sys.argv[1]](Path(sys.argv[2]), *size))
