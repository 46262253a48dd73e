"""Offline WordNet for METEOR, assembled from Debian's wordnet-base + wordnet-sense-index files."""

from __future__ import annotations

from pathlib import Path

import nltk
import pytest

from mlmh.data import wordnet
from mlmh.errors import MlmhError

needs_debian = pytest.mark.skipif(
    not wordnet.DEBIAN_DIR.is_dir(),
    reason="/usr/share/wordnet is absent: apt-get install wordnet-base wordnet-sense-index",
)


@pytest.fixture
def clean_nltk_path(monkeypatch):
    """NLTK's search path without WordNet directories left by other tests."""
    monkeypatch.setattr(nltk.data, "path", [p for p in nltk.data.path if "mlmh-cache" not in p and "nltk_data" not in p])


def test_lexnames_are_the_45_lexicographer_files():
    lines = wordnet.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[5] == "05\tnoun.animal\t1"
    assert lines[44] == "44\tadj.ppl\t3"
    assert [int(line.split("\t")[0]) for line in lines] == list(range(45))


@needs_debian
def test_assembled_corpus_loads_in_nltk(tmp_path, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])  # NLTK reads only under its data path
    target = wordnet.assemble_from_debian(data_dir=tmp_path)
    assert target == tmp_path / "corpora" / "wordnet"
    with pytest.warns(UserWarning, match="multilingual"):  # no OMW data: English only, as METEOR needs
        reader = nltk.corpus.reader.WordNetCorpusReader(str(target), None)
    dog = reader.synsets("dog")
    assert dog and dog[0].name() == "dog.n.01"
    assert dog[0].lexname() == "noun.animal"  # lexnames numbering matches the data files
    assert reader.get_version() == "3.0"
    assert reader.lemma_from_key("dog%1:05:00::").name() == "dog"  # index.sense from wordnet-sense-index


@needs_debian
def test_doctor_check_and_fixer_assemble_into_the_cache(clean_nltk_path, monkeypatch):
    monkeypatch.setattr(wordnet, "network_reachable", lambda *a, **k: False)
    before = wordnet._wordnet_check()
    assert not before.ok and "Debian" in before.detail
    message = wordnet._fix_wordnet()
    assert "assembled" in message
    after = wordnet._wordnet_check()
    assert after.ok and str(wordnet.nltk_data_dir()) in after.detail
    assert wordnet.verify_wordnet().synsets("dog")


def test_scoring_never_installs_and_says_how_to_fix(clean_nltk_path, monkeypatch, tmp_path):
    monkeypatch.setattr(wordnet, "DEBIAN_DIR", tmp_path / "no-wordnet")
    monkeypatch.setattr(wordnet, "install_debian_packages", lambda: pytest.fail("must not install at run time"))
    with pytest.raises(MlmhError, match="mlmh doctor --fix"):
        wordnet.wordnet_for_scoring()


def test_assembly_names_missing_files(tmp_path):
    (tmp_path / "index.noun").write_text("")
    with pytest.raises(MlmhError, match="data.noun"):
        wordnet.assemble_from_debian(source=tmp_path, data_dir=tmp_path / "out")
    assert not (tmp_path / "out" / "corpora" / "wordnet").exists()


def test_ensure_wordnet_refuses_install_when_not_allowed(clean_nltk_path, monkeypatch, tmp_path):
    monkeypatch.setattr(wordnet, "DEBIAN_DIR", Path(tmp_path))
    monkeypatch.setattr(wordnet, "network_reachable", lambda *a, **k: False)
    with pytest.raises(MlmhError, match="WordNet not found"):
        wordnet.ensure_wordnet(allow_download=False, allow_install=False)


def test_a_corpus_assembled_in_the_cache_is_found_without_importing_nltk(tmp_path):
    """mlmh's directory is first on NLTK's path, so its answer is NLTK's answer; a warm run skips the import."""
    import os
    import subprocess
    import sys

    (tmp_path / "nltk_data" / "corpora" / "wordnet").mkdir(parents=True)
    code = ("import sys\nfrom mlmh.data import wordnet\nfast = wordnet.find_wordnet()\nimported = 'nltk' in sys.modules\n"
            "import nltk\nwordnet.register_data_path()\nprint(imported, fast == str(nltk.data.find('corpora/wordnet')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "MLMH_CACHE_DIR": str(tmp_path)})
    assert out.stdout.split() == ["False", "True"]


@needs_debian
def test_a_new_process_scores_with_the_corpus_assembled_in_the_cache(tmp_path):
    """The warm run's path: WordNet found in mlmh's cache without nltk, then read by NLTK, which reads only
    under its data path (a reader made before the path was registered failed its security check)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MLMH_CACHE_DIR": str(tmp_path)}
    assemble = "from mlmh.data import wordnet\nwordnet.assemble_from_debian()"
    subprocess.run([sys.executable, "-c", assemble], env=env, check=True, capture_output=True)
    score = ("from mlmh.data import wordnet\nprint(wordnet.find_wordnet())\n"
             "print(wordnet.wordnet_for_scoring().synsets('dog')[0].name())")
    out = subprocess.run([sys.executable, "-c", score], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == [str(tmp_path / "nltk_data" / "corpora" / "wordnet"), "dog.n.01"]
