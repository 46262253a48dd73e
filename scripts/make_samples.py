"""Write the bundled dataset samples under plugins/data/ in the official formats.

Every text is produced here from the project's own templates, vocabularies and style rules with a
fixed seed, so the samples can ship with the package (the real PAN, MPST and MIMIC-III data cannot).
Re-running the script reproduces the files byte for byte:

    python scripts/make_samples.py            # writes plugins/data/{pan,mpst,mimic}
    python scripts/make_samples.py --check    # fails if the committed files differ from a fresh run
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20240520
DATA_DIR = Path(__file__).resolve().parent.parent / "plugins" / "data"

# --------------------------------------------------------------------------------------------
# Shared text machinery: entity markers survive the style rewrites and become character spans.
# --------------------------------------------------------------------------------------------

_MARK = re.compile("\x00(\\d+)\x00")


class EntityText:
    """Builds a text whose named entities are recorded as (start, end, label) spans."""

    def __init__(self) -> None:
        self.values: list[tuple[str, str]] = []

    def mark(self, value: str, label: str) -> str:
        self.values.append((value, label))
        return f"\x00{len(self.values) - 1}\x00"

    def resolve(self, marked: str) -> tuple[str, list[list]]:
        out: list[str] = []
        spans: list[list] = []
        last = 0
        length = 0
        for match in _MARK.finditer(marked):
            chunk = marked[last : match.start()]
            out.append(chunk)
            length += len(chunk)
            value, label = self.values[int(match.group(1))]
            spans.append([length, length + len(value), label])
            out.append(value)
            length += len(value)
            last = match.end()
        out.append(marked[last:])
        return "".join(out), spans


def word_count(text: str, ents: EntityText) -> int:
    """Words of a marked text, counting each entity by its real length."""
    plain = _MARK.sub(lambda m: ents.values[int(m.group(1))][0], text)
    return len(re.findall(r"\w+(?:['’\-]\w+)*", plain))


def dump_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows)


def stable_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# --------------------------------------------------------------------------------------------
# PAN: fan-fiction-like snippets by authors with deliberately distinct habits.
# --------------------------------------------------------------------------------------------

# {A} and {B} are characters, {P} a place; {while}, {although}, {very}, {said} are style words.
TOPICS: dict[str, list[str]] = {
    "home": [
        "{A} stood in the kitchen {while} the kettle began to sing.",
        "The house on the hill had always smelled of bread and old paper.",
        "{B} had painted the front door a bright shade of blue the summer before.",
        "Nobody in {P} locked their doors, {although} {A} had started to wonder why.",
        "{A} pulled the blanket over {B}'s shoulders and turned down the lamp.",
        "It is {very} quiet here at night, quieter than {A} remembered.",
        "The color of the walls had faded to a soft gray over the years.",
        "{A} did not want to admit how much the old neighbor was missed.",
        "Mom always said that a tidy room made for a tidy mind.",
        "There were letters in the drawer that nobody had opened for years.",
        "{B} set two plates on the table and waited for {A} to sit down.",
    ],
    "journey": [
        "They left {P} before dawn with two bags and a map that {A} did not trust.",
        "The road toward the mountains was longer than anyone had promised.",
        "{B} traveled light and complained about it constantly.",
        "By noon the horses were tired, and {A} was even more so.",
        "The inn at {P} was {very} small, but the fire was warm and the soup was good.",
        "{A} counted the coins twice and still came up short.",
        "Somewhere behind them a bell was ringing, faint and steady.",
        "{B} did not say a word for the first ten miles.",
        "The river had flooded the lower road, so they climbed the ridge instead.",
        "They reached the harbor just as the last ship was leaving.",
        "{A} kept glancing back at the road, {although} nobody seemed to be following.",
    ],
    "magic": [
        "The spell fizzled the moment {A} lost focus.",
        "{B} traced the runes on the door with one careful finger.",
        "There is a cost to every charm, and {A} had never liked paying it.",
        "Light spilled from the open book in a slow golden wave.",
        "{A} did not realize the wand was cracked until it was far too late.",
        "The old library at {P} hummed with something that was not quite sound.",
        "Every candle in the hall went out at once.",
        "{A} had practiced the charm a hundred times {while} {B} watched.",
        "The potion turned the color of weak tea, which was not a good sign.",
        "{B} spoke the counter-curse slowly, one syllable at a time.",
        "The wards around {P} flickered like a candle in a draft.",
    ],
    "city": [
        "The trains into {P} were late again, and the platform was packed.",
        "{A} bought two coffees and a newspaper from the stand on the corner.",
        "Rain ran down the windows of the café in long crooked lines.",
        "{B} had a favorite table near the back, away from the noise.",
        "The office emptied out around six, {although} {A} stayed behind.",
        "Neon signs flickered above the wet pavement.",
        "{A} recognized the voice before turning around.",
        "It was the kind of apartment that never quite warmed up.",
        "They met outside the theater on the corner of the square.",
        "{B} was waiting by the elevator and checking the time.",
        "The whole street smelled of rain and frying onions.",
    ],
    "war": [
        "The camp outside {P} was quiet in the hour before the attack.",
        "{A} checked the straps on the armor one more time.",
        "Nobody slept {very} much the night before a battle.",
        "{B} had lost the banner somewhere in the smoke.",
        "The wall had held for three days, and it would have to hold for one more.",
        "{A} did not think of home, because thinking of home made it worse.",
        "Orders came down the line in short, tired shouts.",
        "The captain's honor meant more to {B} than it should have.",
        "Steel rang on steel somewhere down in the valley.",
        "{A} counted the survivors and then stopped counting.",
        "The scouts came back from {P} with mud up to their knees.",
    ],
    "school": [
        "The first lesson of the term was always the worst.",
        "{A} sat at the back of the classroom and pretended to read.",
        "{B} had memorized every date in the chapter, which was {very} annoying.",
        "The corridor outside the headmaster's office smelled of floor polish.",
        "Exams were three weeks away, and nobody had started studying.",
        "{A} passed a folded note across the desk {while} the teacher was not looking.",
        "The library at {P} closed at nine, so they worked in the common room instead.",
        "{B} could not decide which answer was worse.",
        "Someone had drawn a dragon on the blackboard.",
        "It is hard to concentrate when the whole class is whispering.",
        "{A} had a favorite spot by the window where the radiator was warm.",
    ],
    "sea": [
        "The boat rocked gently against the pier at {P}.",
        "{A} watched the gray water for any sign of the other ship.",
        "Salt had gotten into everything: the ropes, the bread, even the letters.",
        "{B} knew every current between the islands by heart.",
        "The storm came in faster than the old sailors had predicted.",
        "Gulls circled above the harbor, loud and greedy.",
        "{A} had never learned to swim, which was a problem now.",
        "The lighthouse blinked twice and then went dark.",
        "They hauled the nets in by hand as the sun went down.",
        "{B} tied the last knot and wiped the spray away.",
        "The harbor master at {P} did not like strangers.",
    ],
    "winter": [
        "Snow had covered {P} overnight, soft and complete.",
        "{A} wrapped the gray scarf around twice and still felt the cold.",
        "The fire in the hearth was the only warm thing for miles.",
        "{B} left footprints all the way down to the frozen lake.",
        "Every window in the village glowed a pale yellow.",
        "It is the kind of cold that gets into your bones.",
        "{A} had promised to be home before the first snow and had not kept the promise.",
        "The bells of {P} rang out over the white fields.",
        "Icicles hung from the gutter like a row of teeth.",
        "{B} brought hot cider in two mismatched mugs.",
        "{A} and {B} sat by the stove {while} the wind rattled the shutters.",
    ],
}

DIALOGUE: list[str] = [
    "{o}You are late,{c} {B} {said}.",
    "{o}I do not think this is a good idea,{c} {A} {said}.",
    "{o}We cannot stay here,{c} {B} {said}. {o}Not tonight.{c}",
    "{o}Did you hear that?{c} {A} asked.",
    "{o}It is fine,{c} {A} {said}, {although} it clearly was not.",
    "{o}Where have you been?{c} {B} asked.",
    "{o}I will be back before dark,{c} {B} promised.",
    "{o}Do not look at me like that,{c} {A} {said}.",
    "{o}I am not going without you,{c} {A} {said}.",
    "{o}They are waiting for us,{c} {B} {said}. {o}We should go.{c}",
]

# American spellings in the templates -> British spellings (whole words, case kept on the first letter).
BRITISH = {
    "color": "colour", "gray": "grey", "realize": "realise", "neighbor": "neighbour",
    "traveled": "travelled", "harbor": "harbour", "practiced": "practised", "favorite": "favourite",
    "recognized": "recognised", "theater": "theatre", "armor": "armour", "honor": "honour",
    "memorized": "memorised", "toward": "towards", "Mom": "Mum", "apartment": "flat",
    "elevator": "lift", "gotten": "got", "studying": "revising", "draft": "draught",
}

CONTRACTIONS = {
    "do not": "don't", "did not": "didn't", "does not": "doesn't", "is not": "isn't",
    "was not": "wasn't", "could not": "couldn't", "would not": "wouldn't", "had not": "hadn't",
    "cannot": "can't", "Do not": "Don't", "It is": "It's", "it is": "it's", "I am": "I'm", "I will": "I'll",
    "They are": "They're", "they are": "they're", "We are": "We're",
}

FANDOMS: list[dict] = [
    {"name": "Starfall Academy", "people": ["Zoë Marchetti", "Kenji", "Professor Halloran", "Amara", "Tobias Wren"], "places": ["Starfall", "the Glass Tower", "Eastmere"]},
    {"name": "The Iron Vale", "people": ["Captain Søren Hale", "Dagny", "Lord Ashcombe", "Mira", "Old Tomás"], "places": ["the Iron Vale", "Fort Redwick", "Vallbrück"]},
    {"name": "Saltmarsh Chronicles", "people": ["Niamh", "Élodie Fournier", "Jonah Pike", "Gwen", "the harbor master"], "places": ["Saltmarsh", "Kestrel Bay", "Port Lyric"]},
    {"name": "Hollow City Nights", "people": ["Detective Inès Moreau", "Ray Castillo", "Nadia", "Felix", "Mrs. Okafor"], "places": ["Hollow City", "Fifth Street", "the Marlowe Hotel"]},
    {"name": "Northwind Saga", "people": ["Björn", "Astrid", "Leif the Younger", "Sigrún", "Hakon"], "places": ["Northwind", "Greywater", "the Frostfell"]},
    {"name": "The Lantern Guild", "people": ["Renée", "Master Corvin", "Pip", "Isolde Vance", "Marisol"], "places": ["Lanternhold", "the Under-Market", "Saint-Aubin"]},
    {"name": "Brassworks Mysteries", "people": ["Ada Fenwick", "Inspector Crane", "Chiara", "Oskar Lind", "Beatrix"], "places": ["Brassworks", "Cogsworth Lane", "the Clocktower"]},
    {"name": "Wildflower Summer", "people": ["Lucy Bell", "Mateo", "Grandma Rose", "Sam", "Ngozi"], "places": ["Wildflower Farm", "Millbrook", "the old orchard"]},
]


@dataclass
class AuthorStyle:
    """The habits that make one author's texts recognisable."""

    id: str
    british: bool
    contractions: bool
    join_rate: float  # chance of running two sentences together
    joiners: tuple[str, ...]
    words: dict[str, str]  # style words: while, although, very, said
    quotes: tuple[str, str]
    apostrophe: str  # "'" or "’"
    openers: tuple[str, ...]  # favourite sentence openers
    opener_rate: float
    closers: tuple[str, ...] = ()  # favourite tags before the full stop
    closer_rate: float = 0.0
    ellipsis: str = ""  # "…" or "..." to trail off
    ellipsis_rate: float = 0.0
    exclaim_rate: float = 0.0
    emphasis: str = ""  # "*" or "_" around the intensifier
    double_space: bool = False
    paragraph: str = "\n\n"
    paragraph_every: int = 3
    dialogue_rate: float = 0.2
    topics: tuple[str, ...] = ()


AUTHORS: list[AuthorStyle] = [
    AuthorStyle("1044982", True, False, 0.55, ("; ", ", and "), {"while": "whilst", "although": "although", "very": "rather", "said": "replied"}, ("‘", "’"), "’", ("Of course, ", "Naturally, "), 0.2, (", as it happened",), 0.1, topics=("home", "winter", "school", "magic")),
    AuthorStyle("1102937", False, True, 0.05, (", and ",), {"while": "while", "although": "though", "very": "really", "said": "said"}, ("\"", "\""), "'", ("Honestly, ", "Anyway, "), 0.25, (", like always",), 0.1, exclaim_rate=0.25, emphasis="*", paragraph="\n", paragraph_every=2, dialogue_rate=0.35, topics=("city", "school", "home", "sea")),
    AuthorStyle("1187450", False, False, 0.45, (" — ", ", and "), {"while": "as", "although": "even though", "very": "terribly", "said": "murmured"}, ("“", "”"), "’", ("Still, ", "Somehow, "), 0.2, ellipsis="…", ellipsis_rate=0.2, topics=("war", "winter", "journey", "sea")),
    AuthorStyle("1215563", True, True, 0.1, (", and ",), {"while": "while", "although": "though", "very": "pretty", "said": "said"}, ("'", "'"), "'", ("Mind you, ", "To be fair, "), 0.3, (", to be honest",), 0.12, paragraph_every=2, topics=("city", "journey", "home", "war")),
    AuthorStyle("1290018", False, False, 0.35, (", and ", "; "), {"while": "while", "although": "although", "very": "very", "said": "said"}, ("\"", "\""), "'", ("In any case, ", "Needless to say, "), 0.18, double_space=True, paragraph_every=4, dialogue_rate=0.1, topics=("war", "magic", "school", "journey")),
    AuthorStyle("1333721", True, True, 0.6, (" — ", "... and "), {"while": "whilst", "although": "though", "very": "so", "said": "whispered"}, ("“", "”"), "’", ("Truth be told, ", "Funny thing was, "), 0.22, ellipsis="...", ellipsis_rate=0.25, paragraph_every=2, dialogue_rate=0.3, topics=("magic", "sea", "winter", "city")),
    AuthorStyle("1378804", False, True, 0.0, (", and ",), {"while": "while", "although": "but", "very": "super", "said": "said"}, ("\"", "\""), "'", ("Okay so ", "Also, "), 0.2, (", lol",), 0.08, exclaim_rate=0.35, emphasis="_", paragraph="\n", paragraph_every=1, dialogue_rate=0.3, topics=("school", "home", "city", "magic")),
    AuthorStyle("1412290", True, False, 0.4, (", whereupon ", "; "), {"while": "whilst", "although": "although", "very": "exceedingly", "said": "remarked"}, ("‘", "’"), "’", ("Looking back, ", "All the same, "), 0.2, (", if anything",), 0.12, paragraph_every=4, dialogue_rate=0.15, topics=("journey", "war", "home", "sea")),
    AuthorStyle("1466002", False, False, 0.2, (", and ",), {"while": "while", "although": "although", "very": "quite", "said": "answered"}, ("“", "”"), "’", ("Then again, ", "Even so, "), 0.18, ellipsis="…", ellipsis_rate=0.1, topics=("sea", "winter", "city", "school")),
    AuthorStyle("1503377", True, True, 0.3, (" - ", ", and "), {"while": "while", "although": "though", "very": "dead", "said": "said"}, ("'", "'"), "'", ("Right, ", "Thing is, "), 0.3, (", innit",), 0.05, exclaim_rate=0.15, paragraph="\n", paragraph_every=2, dialogue_rate=0.35, topics=("city", "war", "journey", "winter")),
    AuthorStyle("1559140", False, False, 0.65, (", and then ", ", so "), {"while": "as", "although": "although", "very": "incredibly", "said": "breathed"}, ("“", "”"), "’", ("Slowly, ", "Quietly, "), 0.2, ellipsis="…", ellipsis_rate=0.15, paragraph_every=3, dialogue_rate=0.25, topics=("magic", "home", "winter", "journey")),
    AuthorStyle("1604215", True, False, 0.15, (", and ",), {"while": "whilst", "although": "although", "very": "most", "said": "observed"}, ("\"", "\""), "'", ("Indeed, ", "Nevertheless, "), 0.25, (", one supposed",), 0.12, double_space=True, paragraph_every=3, dialogue_rate=0.1, topics=("school", "war", "sea", "magic")),
    AuthorStyle("1650873", False, True, 0.5, ("; ", " — "), {"while": "while", "although": "though", "very": "so", "said": "muttered"}, ("“", "”"), "’", ("Basically, ", "Look, "), 0.25, (", whatever",), 0.1, exclaim_rate=0.1, paragraph_every=2, dialogue_rate=0.3, topics=("war", "city", "sea", "home")),
    AuthorStyle("1702456", True, False, 0.25, (", and ", " (and "), {"while": "while", "although": "although", "very": "awfully", "said": "said"}, ("‘", "’"), "’", ("Perhaps ", "Admittedly, "), 0.2, (", more or less",), 0.12, ellipsis="...", ellipsis_rate=0.1, paragraph_every=4, topics=("journey", "school", "winter", "city")),
    AuthorStyle("1758820", False, True, 0.1, (", and ",), {"while": "while", "although": "though", "very": "real", "said": "drawled"}, ("\"", "\""), "'", ("Well, ", "Shoot, "), 0.3, (", I reckon",), 0.12, exclaim_rate=0.2, paragraph="\n", paragraph_every=2, dialogue_rate=0.4, topics=("home", "journey", "sea", "war")),
    AuthorStyle("1803391", True, True, 0.45, (" — ", "; "), {"while": "whilst", "although": "though", "very": "ever so", "said": "sighed"}, ("“", "”"), "’", ("Oh, ", "Besides, "), 0.22, ellipsis="…", ellipsis_rate=0.2, emphasis="*", paragraph_every=2, dialogue_rate=0.3, topics=("magic", "winter", "sea", "school")),
]


def _apply_map(text: str, mapping: dict[str, str]) -> str:
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def _finish_sentence(sentence: str, style: AuthorStyle, rng: random.Random) -> str:
    """Apply punctuation habits to one narrative sentence that ends in a full stop."""
    if not sentence.endswith("."):
        return sentence
    if style.closers and rng.random() < style.closer_rate:
        sentence = sentence[:-1] + rng.choice(style.closers) + "."
    roll = rng.random()
    if style.ellipsis and roll < style.ellipsis_rate:
        return sentence[:-1] + style.ellipsis
    if roll > 1 - style.exclaim_rate:
        return sentence[:-1] + "!"
    return sentence


def _lower_first(sentence: str) -> str:
    """Lower-case the first letter unless the sentence starts with an entity marker or "I"."""
    if sentence.startswith("\x00") or sentence.startswith("I ") or sentence.startswith("I'") or len(sentence) < 2:
        return sentence
    return sentence[0].lower() + sentence[1:]


def _styled(sentence: str, style: AuthorStyle, rng: random.Random, *, narrative: bool) -> tuple[str, bool]:
    """Spelling, contractions and (for narrative sentences) openers, emphasis and punctuation."""
    if style.british:
        sentence = _apply_map(sentence, BRITISH)
    if style.contractions:
        sentence = _apply_map(sentence, CONTRACTIONS)
    opened = False
    if narrative:
        if rng.random() < style.opener_rate:
            sentence = rng.choice(style.openers) + _lower_first(sentence)
            opened = True
        if style.emphasis:
            word = style.words["very"]
            sentence = re.sub(rf"\b{word}\b", f"{style.emphasis}{word}{style.emphasis}", sentence, count=1)
        sentence = _finish_sentence(sentence, style, rng)
    return sentence, opened


def pan_text(style: AuthorStyle, fandom: dict, rng: random.Random, ents: EntityText) -> str:
    """One 80-150 word snippet in ``style`` about characters of ``fandom``."""
    people = rng.sample(fandom["people"], 2)
    slots = {
        "A": ents.mark(people[0], "PERSON"),
        "B": ents.mark(people[1], "PERSON"),
        "P": ents.mark(rng.choice(fandom["places"]), "LOC"),
        "o": style.quotes[0],
        "c": style.quotes[1],
        **style.words,
    }
    topic = rng.choice(style.topics)
    pool = list(TOPICS[topic]) + list(TOPICS[rng.choice(style.topics)])
    rng.shuffle(pool)
    dialogue = list(DIALOGUE)
    rng.shuffle(dialogue)
    target = rng.randint(85, 140)
    sentences: list[str] = []
    total = 0
    while total < target and pool:
        if dialogue and rng.random() < style.dialogue_rate:
            template, is_dialogue = dialogue.pop(), True
        else:
            template, is_dialogue = pool.pop(), False
        sentence, opened = _styled(template.format(**slots), style, rng, narrative=not is_dialogue)
        count = word_count(sentence, ents)
        if total + count > 150:
            break
        previous = sentences[-1] if sentences else None
        can_join = previous is not None and not is_dialogue and not opened and not previous[1] and previous[0].endswith(".")
        if can_join and rng.random() < style.join_rate:
            joiner = rng.choice(style.joiners)
            tail = _lower_first(sentence)
            if joiner.startswith(" ("):
                tail = tail[:-1] + ")" + tail[-1]
            sentences[-1] = (previous[0][:-1] + joiner + tail, False)
        else:
            sentences.append((sentence, is_dialogue))
        total += count
    if total < 80:  # too short: top up with plain sentences the text has not used yet
        used = {s for s, _ in sentences}
        extra = [t for name in style.topics for t in TOPICS[name]]
        rng.shuffle(extra)
        for template in extra:
            if total >= 80:
                break
            sentence, _ = _styled(template.format(**slots), style, rng, narrative=False)
            count = word_count(sentence, ents)
            if sentence in used or any(sentence[:-1] in s for s in used) or total + count > 150:
                continue
            used.add(sentence)
            sentences.append((sentence, False))
            total += count
    gap = "  " if style.double_space else " "
    paragraphs: list[str] = []
    current: list[str] = []
    for i, (sentence, _) in enumerate(sentences, 1):
        current.append(sentence)
        if i % style.paragraph_every == 0:
            paragraphs.append(gap.join(current))
            current = []
    if current:
        paragraphs.append(gap.join(current))
    text = style.paragraph.join(paragraphs)
    if style.apostrophe != "'":
        text = text.replace("'", style.apostrophe)
    return text


#: Authors are grouped in clusters of four; different-author pairs stay inside a cluster, as PAN
#: builds its author-disjoint training and test sets, so the loader's split keeps whole clusters.
CLUSTER_SIZE = 4
PAIRS_PER_KIND_PER_CLUSTER = 30


def make_pan(rng: random.Random) -> dict[str, str]:
    pairs: list[dict] = []
    truth: list[dict] = []
    entities: list[dict] = []
    clusters = [AUTHORS[i : i + CLUSTER_SIZE] for i in range(0, len(AUTHORS), CLUSTER_SIZE)]
    for cluster in clusters:
        plan: list[tuple[AuthorStyle, AuthorStyle]] = []
        for k in range(PAIRS_PER_KIND_PER_CLUSTER):
            author = cluster[k % len(cluster)]
            plan.append((author, author))
        combos = [(a, b) for i, a in enumerate(cluster) for b in cluster[i + 1 :]]
        for k in range(PAIRS_PER_KIND_PER_CLUSTER):
            a, b = combos[k % len(combos)]
            plan.append((a, b) if k % 2 == 0 else (b, a))
        rng.shuffle(plan)
        for first, second in plan:
            pair_id = stable_uuid(rng)
            fandoms = rng.sample(FANDOMS, 2)
            texts = []
            for index, (style, fandom) in enumerate(zip((first, second), fandoms), start=1):
                ents = EntityText()
                text, spans = ents.resolve(pan_text(style, fandom, rng, ents))
                texts.append(text)
                entities.append({"doc": f"{pair_id}-{index}", "spans": spans})
            pairs.append({"id": pair_id, "fandoms": [f["name"] for f in fandoms], "pair": texts})
            truth.append({"id": pair_id, "same": first.id == second.id, "authors": [first.id, second.id]})
    order = list(range(len(pairs)))
    rng.shuffle(order)
    return {
        "pairs.jsonl": dump_jsonl([pairs[i] for i in order]),
        "truth.jsonl": dump_jsonl([truth[i] for i in order]),
        "entities.jsonl": dump_jsonl(entities),
    }


# --------------------------------------------------------------------------------------------
# Writing and checking
# --------------------------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every sample file, relative to plugins/data, mapped to its content."""
    files: dict[str, str] = {}
    for name, maker in (("pan", make_pan),):
        for rel, content in maker(random.Random(f"{SEED}-{name}")).items():
            files[f"{name}/{rel}"] = content
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk instead of writing")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output directory (default: plugins/data)")
    args = parser.parse_args(argv)
    files = build()
    if args.check:
        stale = [rel for rel, content in files.items() if not (args.out / rel).is_file() or (args.out / rel).read_bytes() != content.encode("utf-8")]
        for rel in stale:
            print(f"differs: {rel}", file=sys.stderr)
        return 1 if stale else 0
    for rel, content in files.items():
        target = args.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))
    print(f"wrote {len(files)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
