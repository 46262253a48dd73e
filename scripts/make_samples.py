"""Write the bundled dataset samples under plugins/mlmh_builtins/data/ in the official formats.

Every text is produced here from the project's own templates, vocabularies and style rules with a
fixed seed, so the samples can ship with the package (the real PAN, MPST and MIMIC-III data cannot).
Re-running the script reproduces the files byte for byte:

    python scripts/make_samples.py            # writes plugins/mlmh_builtins/data/{pan,mpst,mimic}
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
from dataclasses import dataclass
from pathlib import Path

SEED = 20240520
DATA_DIR = Path(__file__).resolve().parent.parent / "plugins" / "mlmh_builtins" / "data"

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
# MPST: movie plot synopses whose sentences carry the vocabulary of their tags.
# --------------------------------------------------------------------------------------------

# {A}/{B} characters with pronoun slots {a_sub} {a_pos} {a_obj} / {b_sub} {b_pos}; {P} a place.
MPST_SETUP = [
    "{A} is a {job} who lives alone in {P}.",
    "{A}, a {job} from {P}, has spent years running from {a_pos} past.",
    "In {P}, {A} works as a {job} and dreams of leaving for good.",
    "The film follows {A}, a {job} whose quiet life is about to change.",
    "After losing {a_pos} job, {A} moves back to {P} to live with {a_pos} sister.",
]
MPST_MIDDLE = [
    "{A} meets {B}, a {job2} with secrets of {b_pos} own.",
    "{B} asks {A} for help, and {a_sub} reluctantly agrees.",
    "Over one long summer, the two grow closer than either of them expected.",
    "Nobody in {P} is quite who they seem to be.",
    "{A} keeps a diary of everything that happens in the following weeks.",
    "Money is short, and {A} takes a second job at the local hotel.",
]
MPST_ENDING = [
    "By the end, {A} must decide what {a_sub} is willing to lose.",
    "The story ends where it began, on the road out of {P}.",
    "In the final scene, {A} and {B} say goodbye at the station.",
    "{A} finally understands what {a_pos} father tried to teach {a_obj}.",
]
MPST_TAGS: dict[str, list[str]] = {
    "murder": [
        "One night a body is found in the river behind {P}, and the police suspect {B}.",
        "{A} discovers that {a_pos} neighbor was poisoned rather than killed by a fall.",
        "The detective assigned to the killing questions every guest at the hotel.",
        "A second victim turns up with the same knife wound.",
        "{A} finds the murder weapon hidden under the floorboards of {b_pos} cabin.",
        "The killer leaves a handwritten note at every crime scene.",
        "{B} is arrested for the murder but insists that {b_sub} was framed.",
    ],
    "romantic": [
        "{A} falls in love with {B} during a rainy weekend by the sea.",
        "Their first kiss happens on a crowded train platform.",
        "{B} writes {A} a long love letter but never sends it.",
        "The two share a candlelit dinner and talk until dawn.",
        "{A} has to choose between a safe engagement and a passionate affair with {B}.",
        "A wedding is planned, and doubts about the marriage begin to grow.",
        "{B} confesses {b_pos} feelings at last under the old bridge.",
    ],
    "comedy": [
        "A mix-up at the airport leaves {A} with the wrong suitcase and a live goose.",
        "{A} pretends to be a famous chef, with hilarious results.",
        "The family's disastrous holiday dinner ends with the kitchen on fire and everyone laughing.",
        "{B} keeps telling jokes at the worst possible moments.",
        "A series of ridiculous misunderstandings turns the party into chaos.",
        "{A} tries to impress the neighbors and ends up stuck on the roof in a chicken costume.",
        "The bumbling uncle accidentally sells the family car to a circus clown.",
    ],
    "revenge": [
        "Years ago {B} betrayed {A} and left {a_obj} with nothing.",
        "{A} vows to make everyone who ruined {a_pos} family pay for it.",
        "{A} spends years planning revenge against the men who burned down {a_pos} farm.",
        "One by one, {A} hunts down the members of the gang.",
        "{A} returns to {P} under a new name to settle an old score.",
        "The final confrontation is bloody and bitter, and nobody is forgiven.",
        "{A} will not rest until the man who killed {a_pos} brother is punished.",
    ],
    "good versus evil": [
        "An ancient evil awakens beneath {P}, and only {A} can stop it.",
        "{A} joins a small band of heroes fighting a tyrant's dark army.",
        "The forces of light and darkness gather for a final battle.",
        "{B} is tempted by the dark lord's promise of power.",
        "A prophecy says that a chosen hero will defeat the sorcerer.",
        "The villain's army marches on the last free kingdom.",
        "{A} must find the sacred sword before the demon king rises again.",
    ],
    "paranormal": [
        "Strange noises fill the old house after midnight, and doors open by themselves.",
        "{A} begins to see the ghost of a girl who drowned in the lake.",
        "A psychic warns {A} that the spirits of {P} are restless.",
        "The haunting grows worse, and the family calls a priest to perform an exorcism.",
        "{B} can hear the voices of the dead through an old radio.",
        "Objects move on their own, and cold spots appear in every room.",
        "The spirit of a murdered bride walks the halls every full moon.",
    ],
    "flashback": [
        "Flashbacks reveal {A}'s childhood in {P} and the accident that changed everything.",
        "The story jumps back twenty years to show how {A} and {B} first met.",
        "Through a series of memories, the audience learns what really happened that winter.",
        "An old photograph brings back the memory of {a_pos} mother's last day.",
        "The film moves back and forth between the present and the summer of 1985.",
        "In a long flashback, {B} remembers the war and the friend {b_sub} left behind.",
        "Scenes from {A}'s school years are slowly revealed as the story unfolds.",
    ],
    "action": [
        "A high-speed car chase through the streets of {P} ends in a massive explosion.",
        "{A} fights {a_pos} way out of the burning warehouse with nothing but a crowbar.",
        "The heist goes wrong, and a gunfight breaks out in the bank vault.",
        "{B} leaps from the helicopter onto the roof of the moving train.",
        "Armed mercenaries storm the embassy, and {A} has to rescue the hostages.",
        "The showdown on the dam is a storm of bullets and fists.",
        "{A} is trained in hand-to-hand combat by a former soldier.",
    ],
}
MPST_PEOPLE = [
    ("Nora Quill", "f"), ("Walter Brandt", "m"), ("Priya Nair", "f"), ("Diego Santos", "m"), ("Hannah Lowe", "f"),
    ("Marcus Reed", "m"), ("Elsa Lindqvist", "f"), ("Tom Gallagher", "m"), ("Yuki Tanaka", "f"), ("Samuel Okoro", "m"),
    ("Clara Dubois", "f"), ("Ivan Petrov", "m"), ("Rosa Delgado", "f"), ("Henry Ashdown", "m"), ("Leila Haddad", "f"),
    ("Frank Moretti", "m"), ("Greta Holm", "f"), ("Omar Farouk", "m"), ("Julia Brennan", "f"), ("Pete Kowalski", "m"),
    ("Maeve Doyle", "f"), ("Arjun Mehta", "m"), ("Sofia Rossi", "f"), ("Jack Turner", "m"),
]
MPST_PLACES = ["Ravenport", "a small town in Vermont", "Brighton", "the outskirts of Lisbon", "Dunmore", "New Orleans", "a fishing village in Norway", "Cape Harrow", "Marseille", "Silver Creek", "Edinburgh", "Lake Everly"]
MPST_JOBS = ["retired schoolteacher", "young journalist", "night-shift nurse", "struggling musician", "small-town sheriff", "ship's engineer", "pastry chef", "former boxer", "museum archivist", "taxi driver", "lighthouse keeper", "bank clerk"]
TITLE_WORDS = (["Last", "Silent", "Broken", "Hidden", "Long", "Crimson", "Winter", "Lost", "Golden", "Final", "Distant", "Burning"],
               ["Harbor", "Promise", "Season", "Letter", "Road", "Garden", "Shadow", "Bridge", "Summer", "Whisper", "Kingdom", "Station"])
PRONOUNS = {"f": ("she", "her", "her"), "m": ("he", "his", "him")}
MPST_COUNT = 180


def _capitalise_first(text: str) -> str:
    return text[0].upper() + text[1:] if text and not text.startswith("\x00") else text


def mpst_synopsis(tags: list[str], rng: random.Random, ents: EntityText) -> str:
    (a_name, a_gender), (b_name, b_gender) = rng.sample(MPST_PEOPLE, 2)
    jobs = rng.sample(MPST_JOBS, 2)
    a, b = PRONOUNS[a_gender], PRONOUNS[b_gender]
    slots = {
        "A": ents.mark(a_name, "PERSON"), "B": ents.mark(b_name, "PERSON"), "P": ents.mark(rng.choice(MPST_PLACES), "LOC"),
        "a_sub": a[0], "a_pos": a[1], "a_obj": a[2], "b_sub": b[0], "b_pos": b[1], "job": jobs[0], "job2": jobs[1],
    }
    tagged = [line for tag in tags for line in rng.sample(MPST_TAGS[tag], 4)]
    # Some sentences of a tag the film does not carry: real plots are not clean keyword lists.
    other = [t for t in MPST_TAGS if t not in tags]
    if rng.random() < 0.3:
        tagged.append(rng.choice(MPST_TAGS[rng.choice(other)]))
    rng.shuffle(tagged)
    middle = rng.sample(MPST_MIDDLE, 3)
    body = [rng.choice(MPST_SETUP)]
    while tagged or middle:
        source = tagged if tagged and (not middle or rng.random() < 0.7) else middle
        body.append(source.pop())
    body.append(rng.choice(MPST_ENDING))
    sentences: list[str] = []
    total = 0
    target = rng.randint(90, 145)
    for i, template in enumerate(body):
        sentence = _capitalise_first(template.format(**slots))
        count = word_count(sentence, ents)
        last = i == len(body) - 1
        if total + count > 150 or (total >= target and not last):
            if last and total + count <= 150:
                sentences.append(sentence)
            continue
        sentences.append(sentence)
        total += count
    return " ".join(sentences)


def make_mpst(rng: random.Random) -> dict[str, str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["imdb_id", "title", "plot_synopsis", "tags", "split", "synopsis_source"])
    entities: list[dict] = []
    used_ids: set[str] = set()
    tag_names = list(MPST_TAGS)
    for index in range(MPST_COUNT):
        imdb_id = f"tt{rng.randint(100000, 9999999):07d}"
        while imdb_id in used_ids:
            imdb_id = f"tt{rng.randint(100000, 9999999):07d}"
        used_ids.add(imdb_id)
        count = rng.choices([1, 2, 3], weights=[0.35, 0.45, 0.2])[0]
        # Every tag leads some films, so each one has enough examples to learn from.
        tags = [tag_names[index % len(tag_names)]] + rng.sample([t for t in tag_names if t != tag_names[index % len(tag_names)]], count - 1)
        ents = EntityText()
        text, spans = ents.resolve(mpst_synopsis(tags, rng, ents))
        title = f"The {rng.choice(TITLE_WORDS[0])} {rng.choice(TITLE_WORDS[1])}"
        split = rng.choices(["train", "val", "test"], weights=[0.64, 0.16, 0.2])[0]
        writer.writerow([imdb_id, title, text, ", ".join(tags), split, "synthetic"])
        entities.append({"doc": imdb_id, "spans": spans})
    return {"mpst_full_data.csv": buffer.getvalue(), "entities.jsonl": dump_jsonl(entities)}


# --------------------------------------------------------------------------------------------
# MIMIC: synthetic discharge summaries (NOTEEVENTS.csv rows) with n2c2-2018-style brat annotations.
# --------------------------------------------------------------------------------------------

SYNTHETIC_HEADER = "SYNTHETIC DISCHARGE SUMMARY - written from templates by the mlmh project; not a real patient record."

# name, strengths, form, routes, frequencies, reasons, duration (or "")
DRUGS: list[tuple[str, list[str], str, list[str], list[str], list[str], str]] = [
    ("Metoprolol tartrate", ["12.5 mg", "25 mg", "50 mg"], "Tablet", ["PO"], ["BID (2 times a day)", "twice daily"], ["hypertension", "atrial fibrillation"], ""),
    ("Lisinopril", ["5 mg", "10 mg", "20 mg"], "Tablet", ["PO", "by mouth"], ["DAILY (Daily)", "once daily"], ["hypertension"], ""),
    ("Atorvastatin", ["20 mg", "40 mg", "80 mg"], "Tablet", ["PO"], ["at bedtime", "DAILY (Daily)"], ["hyperlipidemia"], ""),
    ("Aspirin", ["81 mg", "325 mg"], "Tablet", ["PO"], ["DAILY (Daily)", "once a day"], ["coronary artery disease"], ""),
    ("Furosemide", ["20 mg", "40 mg"], "Tablet", ["PO", "IV"], ["DAILY (Daily)", "BID (2 times a day)"], ["heart failure", "lower extremity edema"], ""),
    ("Warfarin", ["2 mg", "5 mg"], "Tablet", ["PO"], ["once daily at 4 PM", "DAILY (Daily)"], ["atrial fibrillation", "deep vein thrombosis"], ""),
    ("Heparin", ["5,000 units"], "Injection", ["subcutaneously", "SC"], ["every 8 hours", "Q8H (every 8 hours)"], ["DVT prophylaxis"], ""),
    ("Insulin glargine", ["10 units", "18 units", "24 units"], "Injection", ["SC", "subcutaneously"], ["at bedtime", "nightly"], ["type 2 diabetes"], ""),
    ("Metformin", ["500 mg", "1000 mg"], "Tablet", ["PO", "by mouth"], ["BID (2 times a day)", "twice daily with meals"], ["type 2 diabetes"], ""),
    ("Levothyroxine", ["50 mcg", "75 mcg", "100 mcg"], "Tablet", ["PO"], ["DAILY (Daily)", "every morning"], ["hypothyroidism"], ""),
    ("Omeprazole", ["20 mg", "40 mg"], "Capsule", ["PO"], ["DAILY (Daily)", "once daily before breakfast"], ["GERD", "reflux"], ""),
    ("Pantoprazole", ["40 mg"], "Tablet", ["PO", "IV"], ["Q12H (every 12 hours)", "daily"], ["GI prophylaxis", "gastritis"], ""),
    ("Amoxicillin", ["500 mg", "875 mg"], "Capsule", ["PO"], ["TID (3 times a day)", "every 12 hours"], ["community-acquired pneumonia", "sinusitis"], "for 7 days"),
    ("Ciprofloxacin", ["250 mg", "500 mg"], "Tablet", ["PO"], ["BID (2 times a day)", "every 12 hours"], ["urinary tract infection"], "for 5 days"),
    ("Vancomycin", ["1 gram", "1250 mg"], "Recon Soln", ["IV", "intravenously"], ["Q12H (every 12 hours)", "every 12 hours"], ["cellulitis", "MRSA bacteremia"], "for 14 days"),
    ("Ceftriaxone", ["1 gram", "2 grams"], "Recon Soln", ["IV", "intravenously"], ["Q24H (every 24 hours)", "once daily"], ["pneumonia", "pyelonephritis"], "for 10 days"),
    ("Acetaminophen", ["325 mg", "500 mg", "650 mg"], "Tablet", ["PO", "by mouth"], ["Q6H (every 6 hours) as needed", "every 6 hours as needed"], ["pain", "fever"], ""),
    ("Oxycodone", ["5 mg"], "Tablet", ["PO"], ["Q4H (every 4 hours) as needed", "every 4 hours as needed"], ["severe pain"], "for 3 days"),
    ("Albuterol", ["90 mcg"], "Inhaler", ["inhaled", "INH"], ["Q4H (every 4 hours) as needed", "every 4 hours as needed"], ["shortness of breath", "wheezing"], ""),
    ("Prednisone", ["20 mg", "40 mg"], "Tablet", ["PO"], ["DAILY (Daily)", "once daily"], ["COPD exacerbation", "asthma flare"], "for 5 days"),
    ("Senna", ["8.6 mg"], "Tablet", ["PO"], ["BID (2 times a day) as needed", "at bedtime as needed"], ["constipation"], ""),
    ("Docusate sodium", ["100 mg"], "Capsule", ["PO"], ["BID (2 times a day)", "twice daily"], ["constipation"], ""),
    ("Gabapentin", ["100 mg", "300 mg"], "Capsule", ["PO"], ["TID (3 times a day)", "three times daily"], ["neuropathic pain", "diabetic neuropathy"], ""),
    ("Sertraline", ["50 mg", "100 mg"], "Tablet", ["PO"], ["DAILY (Daily)", "every morning"], ["depression", "anxiety"], ""),
    ("Ondansetron", ["4 mg"], "Tablet, Rapid Dissolve", ["PO", "IV"], ["Q8H (every 8 hours) as needed", "every 8 hours as needed"], ["nausea"], ""),
    ("Lorazepam", ["0.5 mg", "1 mg"], "Tablet", ["PO"], ["Q6H (every 6 hours) as needed", "at bedtime as needed"], ["anxiety", "insomnia"], ""),
    ("Clopidogrel", ["75 mg"], "Tablet", ["PO"], ["DAILY (Daily)", "once daily"], ["coronary stent placement"], ""),
    ("Apixaban", ["2.5 mg", "5 mg"], "Tablet", ["PO"], ["BID (2 times a day)", "twice daily"], ["atrial fibrillation", "pulmonary embolism"], ""),
    ("Potassium chloride", ["20 mEq"], "Tablet, ER", ["PO"], ["DAILY (Daily)", "once daily"], ["hypokalemia"], "for 3 days"),
    ("Magnesium oxide", ["400 mg"], "Tablet", ["PO"], ["BID (2 times a day)", "twice daily"], ["hypomagnesemia"], ""),
]
DOSAGES = {"Tablet": ["One (1)", "Two (2)", "1 tablet", "2 tablets"], "Capsule": ["One (1)", "1 capsule", "2 capsules"], "Inhaler": ["Two (2) puffs", "2 puffs", "1-2 puffs"]}
COMPLAINTS = [
    ("shortness of breath", "COPD exacerbation"), ("chest pain", "non-ST elevation myocardial infarction"), ("fever and cough", "community-acquired pneumonia"),
    ("leg swelling", "acute on chronic heart failure"), ("dysuria and flank pain", "pyelonephritis"), ("palpitations", "atrial fibrillation with rapid ventricular response"),
    ("redness and swelling of the left leg", "cellulitis"), ("confusion", "urinary tract infection"), ("abdominal pain and vomiting", "acute pancreatitis"),
    ("fall at home", "syncope"), ("high blood sugars", "diabetic ketoacidosis"), ("black stools", "upper gastrointestinal bleed"),
]
HISTORY = ["hypertension", "type 2 diabetes", "hyperlipidemia", "chronic kidney disease", "COPD", "coronary artery disease", "atrial fibrillation", "hypothyroidism", "depression", "GERD", "obesity", "osteoarthritis"]
SERVICES = ["MEDICINE", "CARDIOLOGY", "SURGERY", "NEUROLOGY"]
COURSE = [
    "{pron} was treated with {drug} {route} and improved over the next {days} days.",
    "On arrival {pron_low} received {drug} {strength} {route} for {reason}.",
    "{pron} was started on {drug} for {reason}, which {pron_low} tolerated well.",
    "{drug} was held on admission because of low blood pressure and restarted before discharge.",
]
FOLLOW_UP = [
    "Please follow up with your primary care physician within one week.",
    "Please keep all of your appointments and bring this list of medications with you.",
    "Return to the emergency department if you have chest pain, fever or trouble breathing.",
    "Please have your blood work checked on Monday.",
]
MIMIC_COUNT = 110
OTHER_CATEGORIES = ["Nursing/other", "Radiology", "ECG", "Physician "]


class BratNote:
    """A note text with brat entities (T lines) and relations (R lines) added as it is written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.entities: list[tuple[str, list[tuple[int, int]], str]] = []
        self.relations: list[tuple[str, str, str]] = []

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def entity(self, text: str, label: str) -> str:
        """Append ``text`` as an entity; returns its brat id."""
        start = self.length
        self.add(text)
        self.entities.append((label, [(start, self.length)], text))
        return f"T{len(self.entities)}"

    def discontinuous(self, label: str, fragments: list[tuple[int, int]]) -> str:
        text = "".join(self.parts)
        self.entities.append((label, fragments, " ".join(text[s:e] for s, e in fragments)))
        return f"T{len(self.entities)}"

    def relate(self, kind: str, arg1: str, arg2: str) -> None:
        self.relations.append((kind, arg1, arg2))

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def ann(self) -> str:
        lines = []
        for i, (label, fragments, text) in enumerate(self.entities, start=1):
            offsets = ";".join(f"{s} {e}" for s, e in fragments)
            lines.append(f"T{i}\t{label} {offsets}\t{text}")
        for i, (kind, arg1, arg2) in enumerate(self.relations, start=1):
            lines.append(f"R{i}\t{kind} Arg1:{arg1} Arg2:{arg2}")
        return "\n".join(lines) + "\n"


def _medication_line(note: BratNote, number: int, drug: tuple, rng: random.Random) -> None:
    name, strengths, form, routes, frequencies, reasons, duration = drug
    note.add(f"{number}. ")
    drug_id = note.entity(name, "Drug")
    note.add(" ")
    linked = [("Strength-Drug", note.entity(rng.choice(strengths), "Strength"))]
    if form in DOSAGES and rng.random() < 0.6:  # MIMIC's own "Sig:" layout
        note.add(" ")
        linked.append(("Form-Drug", note.entity(form, "Form")))
        note.add(" Sig: ")
        linked.append(("Dosage-Drug", note.entity(rng.choice(DOSAGES[form]), "Dosage")))
        note.add(" ")
    else:
        note.add(" ")
    linked.append(("Route-Drug", note.entity(rng.choice(routes), "Route")))
    note.add(" ")
    linked.append(("Frequency-Drug", note.entity(rng.choice(frequencies), "Frequency")))
    if duration and rng.random() < 0.8:
        note.add(" ")
        linked.append(("Duration-Drug", note.entity(duration, "Duration")))
    if rng.random() < 0.6:
        note.add(" for ")
        linked.append(("Reason-Drug", note.entity(rng.choice(reasons), "Reason")))
    note.add(".\n")
    for kind, entity_id in linked:
        note.relate(kind, entity_id, drug_id)


def _fill(note: BratNote, template: str, values: dict[str, tuple[str, str | None]]) -> None:
    """Write ``template`` with ``{slot}``s; a slot whose value has a label becomes an entity."""
    for piece in re.split(r"(\{\w+\})", template):
        if piece.startswith("{") and piece.endswith("}"):
            text, label = values[piece[1:-1]]
            note.entity(text, label) if label else note.add(text)
        else:
            note.add(piece)


def discharge_summary(rng: random.Random, row_id: int) -> BratNote:
    note = BratNote()
    year = rng.randint(2110, 2190)
    month, day = rng.randint(1, 12), rng.randint(1, 20)
    stay = rng.randint(2, 9)
    age = rng.randint(34, 91)
    female = rng.random() < 0.5
    complaint, diagnosis = rng.choice(COMPLAINTS)
    history = rng.sample(HISTORY, 2)
    note.add(f"{SYNTHETIC_HEADER}\nAdmission Date:  [**{year}-{month}-{day}**]     Discharge Date:   [**{year}-{month}-{day + stay}**]\n\n")
    note.add(f"Service: {rng.choice(SERVICES)}\n\nChief Complaint:\n{complaint.capitalize()}\n\nHistory of Present Illness:\n")
    pron = "She" if female else "He"
    note.add(f"{age} year old {'woman' if female else 'man'} with a history of ")
    note.entity(history[0], "Reason")
    note.add(" and ")
    note.entity(history[1], "Reason")
    note.add(f" who presented with {complaint}. ")
    drugs = rng.sample(DRUGS, rng.randint(2, 4))
    course_drug = drugs[0]
    values = {
        "pron": (pron, None), "pron_low": (pron.lower(), None), "days": (str(rng.randint(2, 4)), None),
        "drug": (course_drug[0], "Drug"), "route": (rng.choice(course_drug[3]), "Route"),
        "strength": (rng.choice(course_drug[1]), "Strength"), "reason": (rng.choice(course_drug[5]), "Reason"),
    }
    _fill(note, rng.choice(COURSE), values)
    if rng.random() < 0.3:  # n2c2's classic discontinuous drug: "Vitamin D and B12" -> "Vitamin ... B12"
        note.add(" Vitamin D and B12 levels were low, so both were repleted ")
        start = note.text.index("Vitamin D and B12", note.length - 60)
        note.entities.append(("Drug", [(start, start + 9)], "Vitamin D"))
        note.discontinuous("Drug", [(start, start + 7), (start + 14, start + 17)])
        note.entity("orally", "Route")
        note.add(".")
    note.add("\n\nDischarge Medications:\n")
    for number, drug in enumerate(drugs, start=1):
        _medication_line(note, number, drug, rng)
    note.add("\nDischarge Diagnosis:\n")
    note.entity(diagnosis, "Reason")
    note.add("\n\nDischarge Instructions:\n")
    note.add(rng.choice(FOLLOW_UP) + "\n")
    return note


def _other_note(rng: random.Random, category: str) -> str:
    findings = rng.choice(["No acute cardiopulmonary process.", "Sinus rhythm, rate 72. No acute changes.", "Patient resting comfortably, vital signs stable.", "Mild cardiomegaly without edema."])
    return f"SYNTHETIC {category.strip().upper()} NOTE - written by the mlmh project; not a real patient record.\n{findings}\n"


def make_mimic(rng: random.Random) -> dict[str, str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY", "DESCRIPTION", "CGID", "ISERROR", "TEXT"])
    files: dict[str, str] = {}
    row_id = 100000
    for index in range(MIMIC_COUNT):
        row_id += rng.randint(1, 40)
        subject, hadm = rng.randint(10000, 99999), rng.randint(100000, 199999)
        note = discharge_summary(rng, row_id)
        date = re.search(r"Discharge Date:\s+\[\*\*(\d+)-(\d+)-(\d+)\*\*\]", note.text)
        chartdate = f"{date.group(1)}-{int(date.group(2)):02d}-{int(date.group(3)):02d}"
        writer.writerow([row_id, subject, hadm, chartdate, "", "", "Discharge summary", "Report", "", "", note.text])
        files[f"brat/{row_id}.txt"] = note.text
        files[f"brat/{row_id}.ann"] = note.ann()
        if index % 10 == 4:  # other note types of the same stay, which the loader skips
            row_id += 1
            category = OTHER_CATEGORIES[(index // 10) % len(OTHER_CATEGORIES)]
            writer.writerow([row_id, subject, hadm, chartdate, f"{chartdate} 08:15:00", "", category, "Report", rng.randint(14000, 21000), "", _other_note(rng, category)])
    # One summary marked as entered in error (ISERROR=1), as MIMIC has: the loader drops and counts it.
    row_id += 7
    erroneous = discharge_summary(rng, row_id)
    writer.writerow([row_id, 12345, 123456, "2150-01-01", "", "", "Discharge summary", "Report", "", "1", erroneous.text])
    files["NOTEEVENTS.csv"] = buffer.getvalue()
    return dict(sorted(files.items()))


# --------------------------------------------------------------------------------------------
# Writing and checking
# --------------------------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every sample file, relative to plugins/mlmh_builtins/data, mapped to its content."""
    files: dict[str, str] = {}
    for name, maker in (("pan", make_pan), ("mpst", make_mpst), ("mimic", make_mimic)):
        for rel, content in maker(random.Random(f"{SEED}-{name}")).items():
            files[f"{name}/{rel}"] = content
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk instead of writing")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output directory (default: plugins/mlmh_builtins/data)")
    args = parser.parse_args(argv)
    files = build()
    datasets = sorted({rel.split("/")[0] for rel in files})
    extra = [p for name in datasets for p in sorted((args.out / name).rglob("*")) if p.is_file() and p.relative_to(args.out).as_posix() not in files]
    if args.check:
        stale = [rel for rel, content in files.items() if not (args.out / rel).is_file() or (args.out / rel).read_bytes() != content.encode("utf-8")]
        for rel in stale:
            print(f"differs: {rel}", file=sys.stderr)
        for path in extra:
            print(f"not written by this script: {path}", file=sys.stderr)
        return 1 if stale or extra else 0
    for path in extra:
        path.unlink()
    for rel, content in files.items():
        target = args.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))
    print(f"wrote {len(files)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
