"""npbert's built-in corpus: a deterministic generator of short English stories, so
`npbert pretrain` runs with no download. See docs/builtin_corpus.md.

A small world of people (first and family name, gender, age, profession, city and country,
workplace, pet, hobby, a friend). Each document tells one person's day in a fixed order:
introduction, background, work, hobby, an event at work and how it was solved, an ending.
Why a small BERT learns it in a few hundred steps:
  * NSP: nearly every sentence names the person (or says he/she) and uses the words of one
    profession, so a true next segment shares names and topic with segment A, while a
    segment from another document almost never does;
  * MLM: names repeat, a profession fixes its verbs, objects and workplace, a city fixes its
    country, pronouns agree with the name, and collocations recur ("at the end of the day");
    function words and punctuation keep a realistic most-frequent-token baseline.

Every sentence is rendered from a template as (word, tag) pairs, tags being BIO labels for
PER/LOC/ORG spans, and every document keeps its facts, so builtin_tasks/ can make labelled
fine-tuning sets from the same world. builtin_vocab.py lists every word the generators can emit.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import regex


DEFAULT_NUM_DOCUMENTS = 4000
CORPUS_SEED = 0  # the corpus is fixed: `npbert prepare --seed` changes the masking, not the stories

FEMALE_NAMES = ("Anna Maria Sofia Emma Laura Clara Julia Nora Elena Lucy Alice Grace Hannah Olivia Rosa Ella "
                "Mia Lena Sara Ida Vera Nina Eva Zoe Helen Ruth Amy Kate Jane Lily").split()
MALE_NAMES = ("David Paul Peter Tom Jack Leo Omar Hugo Felix Oscar Sam Ben Max Luca Marco Noah Adam Ivan "
              "Karl Jonas Milo Erik Hans Carlos Diego Pablo Victor Henry George Frank").split()
SURNAMES = ("Smith Brown Miller Weber Rossi Garcia Silva Novak Berg Fischer Moreau Bauer Costa Lopez Walker "
            "Young Hill Wood Stone Fox Reed Hart Lane Grant Cole Baker Ford Kent Moss Shaw").split()
CITIES = (("Paris", "France"), ("Lyon", "France"), ("Berlin", "Germany"), ("Hamburg", "Germany"),
          ("Rome", "Italy"), ("Naples", "Italy"), ("Madrid", "Spain"), ("Seville", "Spain"),
          ("Lisbon", "Portugal"), ("Porto", "Portugal"), ("London", "England"), ("Leeds", "England"),
          ("Dublin", "Ireland"), ("Oslo", "Norway"), ("Vienna", "Austria"), ("Cairo", "Egypt"),
          ("Tokyo", "Japan"), ("Kyoto", "Japan"), ("Lima", "Peru"), ("Toronto", "Canada"),
          ("Sydney", "Australia"), ("Delhi", "India"), ("New York", "America"), ("Boston", "America"),
          ("Buenos Aires", "Argentina"), ("Cape Town", "South Africa"), ("Mexico City", "Mexico"))
PETS = ("dog", "cat", "horse", "parrot", "rabbit", "goat", "tortoise")
PET_NAMES = "Rex Bella Luna Rocky Daisy Pepper Biscuit Coco Shadow Ziggy Muffin Bruno Pip Mango Olive".split()
HOBBIES = ("play chess", "swim in the lake", "read old books", "walk in the hills", "play football",
           "grow flowers", "collect stamps", "ride a bicycle", "sing in a choir", "go fishing",
           "play cards with friends", "watch films", "cook soup for the neighbours", "run in the park")
ORG_FIRST = "Golden Silver Blue Green Red Royal Old Sunny North Little".split()
ORG_SECOND = "Oak River Hill Star Bridge Lake Rose Lion Valley Stone".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
SEASONS = "spring summer autumn winter".split()


@dataclass(frozen=True)
class Profession:
    job: str          # "baker"
    place: str        # the workplace, "bakery"
    org_kind: str     # last word of a workplace's name, "Bakery"
    activities: tuple  # sentence templates about the work
    events: tuple     # (problem, solution) templates


PROFESSIONS = (
    Profession("baker", "bakery", "Bakery", (
        "{name} bakes fresh bread every morning.", "{He} makes cakes and cookies for the customers.",
        "The oven at the bakery is always hot.", "{name} buys flour and sugar at the market.",
        "People come to the bakery to buy warm bread.", "{name} likes the smell of bread in the morning."), (
        ("the oven at the bakery broke", "{friend} came to fix the oven, and {name} baked bread again"),
        ("the bakery had no flour left", "{name} bought flour at the market and made the cakes in time"))),
    Profession("doctor", "hospital", "Hospital", (
        "{name} helps sick patients at the hospital.", "{He} listens to the heart of each patient.",
        "{name} gives medicine to children with a cold.", "The nurses at the hospital ask {name} for advice.",
        "{name} washes {his} hands before every patient.", "{He} writes notes about each patient."), (
        ("a man fell and broke his leg", "{name} took care of his leg at the hospital"),
        ("many patients came to the hospital with a fever", "{name} worked all night and helped every patient"))),
    Profession("teacher", "school", "School", (
        "{name} teaches history to the children.", "{He} reads stories to the class every day.",
        "The children at the school like {name} very much.", "{name} writes lessons on the board.",
        "{name} checks the homework of the students.", "{He} takes the class to the museum."), (
        ("the students did not finish their homework", "{name} helped them after the lesson"),
        ("a window at the school broke", "{friend} came to fix the window, and the lesson went on"))),
    Profession("farmer", "farm", "Farm", (
        "{name} feeds the cows and the chickens.", "{He} grows wheat and corn in the fields.",
        "{name} drives a red tractor on the farm.", "The farm has many cows and sheep.",
        "{name} sells milk and eggs at the market.", "{He} gets up early to milk the cows."), (
        ("a storm damaged the barn on the farm", "{friend} helped {name} to repair the barn"),
        ("the cows ran out of the field", "{name} found the cows and brought them back to the farm"))),
    Profession("fisher", "harbor", "Harbor", (
        "{name} catches fish in the sea.", "{He} sails a small boat out of the harbor.",
        "{name} repairs the nets on the boat.", "The harbor is full of boats in the morning.",
        "{name} sells fresh fish at the harbor.", "{He} knows every wave of the sea."), (
        ("a big storm came over the sea", "{name} sailed the boat back to the harbor safely"),
        ("the nets on the boat were torn", "{friend} helped {name} to repair the nets"))),
    Profession("pilot", "airport", "Airlines", (
        "{name} flies planes to many countries.", "{He} checks the engines before every flight.",
        "{name} talks to the passengers before take off.", "The airport is busy every day.",
        "{name} lands the plane gently on the runway.", "{He} studies the weather before each flight."), (
        ("the flight was late because of fog", "{name} waited for the fog to clear and flew the plane safely"),
        ("an engine of the plane made a strange noise", "{name} landed the plane and the engineers fixed it"))),
    Profession("chef", "restaurant", "Restaurant", (
        "{name} cooks pasta and soup at the restaurant.", "{He} cuts vegetables with a sharp knife.",
        "The guests at the restaurant love the food of {name}.", "{name} tastes every sauce before dinner.",
        "{name} buys fresh vegetables at the market.", "{He} writes the menu for the restaurant."), (
        ("the restaurant was full of hungry guests", "{name} cooked dinner for everyone in time"),
        ("the stove at the restaurant stopped working", "{friend} came to fix the stove, and {name} cooked again"))),
    Profession("carpenter", "workshop", "Workshop", (
        "{name} builds tables and chairs from wood.", "{He} cuts the wood with a saw.",
        "The workshop smells of fresh wood.", "{name} makes a new door for a house.",
        "{name} uses a hammer and nails every day.", "{He} paints the chairs in the workshop."), (
        ("the saw in the workshop broke", "{name} bought a new saw and finished the table"),
        ("a family needed a bed for their baby", "{name} built the bed in two days"))),
    Profession("painter", "studio", "Gallery", (
        "{name} paints pictures of the sea and the hills.", "{He} mixes colors on a wooden board.",
        "The studio is full of paintings and brushes.", "{name} paints a picture of {his} {pet}.",
        "{name} sells paintings at the gallery.", "{He} paints in the light of the morning."), (
        ("the paint in the studio was gone", "{name} bought new paint and finished the picture"),
        ("a painting fell and broke its frame", "{friend} made a new frame for the painting"))),
    Profession("musician", "concert hall", "Orchestra", (
        "{name} plays the piano every evening.", "{He} writes songs about the city.",
        "{name} plays music at the concert hall.", "The audience claps after each song.",
        "{name} practices the violin for many hours.", "{He} sings with the orchestra."), (
        ("a string of the violin broke before the concert", "{name} changed the string and played very well"),
        ("the piano at the concert hall was out of tune", "{friend} tuned the piano before the concert"))),
    Profession("gardener", "garden", "Gardens", (
        "{name} waters the flowers in the garden.", "{He} plants roses and tulips in spring.",
        "{name} cuts the grass of the park.", "The garden is full of trees and flowers.",
        "{name} picks apples from the trees.", "{He} digs the soil with a spade."), (
        ("the garden was dry after a hot week", "{name} watered every plant in the garden"),
        ("rabbits ate the vegetables in the garden", "{name} built a fence around the vegetables"))),
    Profession("mechanic", "garage", "Garage", (
        "{name} repairs cars at the garage.", "{He} changes the oil of the engines.",
        "The garage is full of tools and tires.", "{name} fixes the brakes of an old car.",
        "{name} checks the tires of every car.", "{He} cleans {his} tools after work."), (
        ("a bus broke down in the street", "{name} repaired the bus and the driver went on"),
        ("the garage had no new tires", "{friend} brought tires to the garage, and {name} fixed the car"))),
)

INTRODUCTIONS = (
    "{full} is a {job} who lives in {city}.",
    "{full} works as a {job} in {city}.",
    "This is the story of {full}, a {job} from {city}.",
)
BACKGROUND = (
    "{He} is {age} years old.",
    "{city} is a city in {country}.",
    "{name} works at {org}.",
    "Every morning, {name} goes to the {place}.",
    "{name} has a {pet} called {petname}.",
    "{name} has a good friend called {friend}.",
)
HOBBY_SENTENCES = (
    "In {his} free time, {name} likes to {hobby}.",
    "On {day}, {name} likes to {hobby}.",
)
EVENT_OPENINGS = ("One {day} in {season}, ", "Last {season}, ")
ENDINGS = (
    "At the end of the day, {name} went home to {petname}.",
    "{He} was tired but happy.",
    "{name} loves {his} life in {city}.",
    "The next day, {name} went back to the {place}.",
)

PRONOUNS = {"female": {"he": "she", "his": "her", "him": "her"}, "male": {"he": "he", "his": "his", "him": "him"}}
ENTITY_SLOTS = {"full": "PER", "name": "PER", "friend": "PER", "city": "LOC", "country": "LOC", "org": "ORG"}
_PIECE = regex.compile(r"\{(\w+)\}|(\w+|[^\w\s])")      # a template slot, or one word / punctuation mark
_NO_SPACE_BEFORE = frozenset(".,!?")
JOIN_PROBABILITY = 0.7
AND, SO = ", and ", ", so "     # connectors of joined sentences (a problem and its solution: so)


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    gender: str
    age: int
    job: str
    city: str
    country: str
    org: str
    pet: str
    petname: str
    hobby: str
    friend: str

    @property
    def full(self):
        return f"{self.first} {self.last}"

    @property
    def profession(self) -> Profession:
        return next(p for p in PROFESSIONS if p.job == self.job)


@dataclass(frozen=True)
class Document:
    person: Person
    tagged: list       # sentences, each a list of (word, BIO tag) pairs
    sections: list     # section name of each sentence: intro, background, work, hobby, event, ending

    @property
    def sentences(self) -> list:
        return [detokenize(words) for words in self.tagged]


def pick(rng, options):
    return options[int(rng.integers(len(options)))]


def random_person(rng) -> Person:
    gender = pick(rng, ("female", "male"))
    first = pick(rng, FEMALE_NAMES if gender == "female" else MALE_NAMES)
    friend = pick(rng, [n for n in FEMALE_NAMES + MALE_NAMES if n != first])
    city, country = pick(rng, CITIES)
    profession = pick(rng, PROFESSIONS)
    org = f"{pick(rng, ORG_FIRST)} {pick(rng, ORG_SECOND)} {profession.org_kind}"
    return Person(first=first, last=pick(rng, SURNAMES), gender=gender, age=int(rng.integers(21, 70)),
                  job=profession.job, city=city, country=country, org=org, pet=pick(rng, PETS),
                  petname=pick(rng, PET_NAMES), hobby=pick(rng, HOBBIES), friend=friend)


def slot_values(person: Person, rng) -> dict:
    values = dict(full=person.full, name=person.first, friend=person.friend, city=person.city,
                  country=person.country, org=person.org, job=person.job, place=person.profession.place,
                  pet=person.pet, petname=person.petname, hobby=person.hobby, age=str(person.age),
                  day=pick(rng, DAYS), season=pick(rng, SEASONS))
    values.update(PRONOUNS[person.gender])
    return values


@lru_cache(maxsize=None)
def pieces(text) -> tuple:
    """Template or value -> ((slot, word), ...): exactly one of the two is non-empty."""
    return tuple(_PIECE.findall(text))


def render(template, values) -> list:
    """Template -> [(word, tag)]: entity slots get B-/I- tags, everything else O.
    A slot written capitalised ({He}) capitalises its value's first letter."""
    out = []
    for slot, word in pieces(template):
        if not slot:
            out.append((word, "O"))
            continue
        value = values[slot.lower()]
        if slot[0].isupper():
            value = value[0].upper() + value[1:]
        kind = ENTITY_SLOTS.get(slot.lower())
        for k, (_, w) in enumerate(pieces(value)):
            out.append((w, "O" if kind is None else ("B-" if k == 0 else "I-") + kind))
    return out


def detokenize(words) -> str:
    """(word, tag) pairs or words -> text, with no space before . , ! ?"""
    text = ""
    for w in words:
        w = w[0] if isinstance(w, tuple) else w
        text += w if not text or w in _NO_SPACE_BEFORE else " " + w
    return text


def sample(rng, options, low, high) -> list:
    """Between low and high distinct options, in random order."""
    k = int(rng.integers(low, high + 1))
    return [options[i] for i in rng.permutation(len(options))[:k]]


def story_templates(person: Person, rng) -> list:
    """(section, template) pairs of one document, in story order."""
    problem, solution = pick(rng, person.profession.events)
    event = [pick(rng, EVENT_OPENINGS) + problem + ".", solution[0].upper() + solution[1:] + "."]
    sections = [("intro", [pick(rng, INTRODUCTIONS)]), ("background", sample(rng, BACKGROUND, 2, 4)),
                ("work", sample(rng, person.profession.activities, 3, 4)), ("hobby", [pick(rng, HOBBY_SENTENCES)]),
                ("event", join_clauses(rng, event, SO)), ("ending", sample(rng, ENDINGS, 1, 2))]
    return [(name, t) for name, templates in sections for t in join_clauses(rng, templates, AND)]


def join_clauses(rng, templates, connector) -> list:
    """Join neighbouring sentences in pairs, each pair with probability JOIN_PROBABILITY:
    "A." + "B." -> "A, and b." Real sentences are longer than one clause, which keeps "." from
    being a tenth of all tokens (an unrealistically easy most-frequent-token baseline)."""
    out, i = [], 0
    while i < len(templates):
        if i + 1 < len(templates) and rng.random() < JOIN_PROBABILITY:
            out.append(templates[i][:-1] + connector + lower_first(templates[i + 1]))
            i += 2
        else:
            out.append(templates[i])
            i += 1
    return out


def lower_first(template) -> str:
    """A sentence's first word as it reads inside a sentence: {He} -> {he}, The -> the, names kept."""
    if template.startswith("{"):
        slot = template[1:template.index("}")]
        return template if slot.lower() in ENTITY_SLOTS else "{" + slot.lower() + template[template.index("}"):]
    return template[0].lower() + template[1:]


def generate_document(rng) -> Document:
    person = random_person(rng)
    values = slot_values(person, rng)
    sections, templates = zip(*story_templates(person, rng))
    return Document(person, [render(t, values) for t in templates], list(sections))


def generate_documents(num_documents=DEFAULT_NUM_DOCUMENTS, seed=CORPUS_SEED) -> list:
    """num_documents stories; the same (num_documents, seed) always gives the same ones, and
    the first k documents do not depend on num_documents."""
    rng = np.random.default_rng(seed)
    return [generate_document(rng) for _ in range(num_documents)]
