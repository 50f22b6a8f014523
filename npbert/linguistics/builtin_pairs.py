"""npbert's own minimal pairs, in BLiMP's format, written over the built-in corpus's words
(npbert/data/builtin_vocab.py) so that the default model (`npbert pretrain`) can be asked about
every piece of them: six paradigms of PAIRS_PER_PARADIGM pairs each, generated from templates
with a fixed seed (the same pairs on every machine). Good and bad sentence differ in one word
and have the same number of words.

    determiner_noun_agreement            Anna likes two boats. / Anna likes two boat.
    determiner_noun_agreement_with_adj.  Anna likes this old boat. / Anna likes this old boats.
    regular_plural_subject_verb_agr.     The children play chess. / The children plays chess.
    distractor_agreement_relational_noun The friend of the students was tired. / ... were tired.
    transitive                           Anna repaired the oven. / Anna waited the oven.
    animate_subject                      The doctor helped the patients. / The oven helped the patients.

`python -m npbert.linguistics.builtin_pairs --out DIR` writes them as DIR/<UID>.jsonl, for any
implementation to score.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

from npbert.data.builtin_corpus import FEMALE_NAMES, MALE_NAMES
from npbert.linguistics.pairs import MinimalPair, read_pairs

PAIRS_PER_PARADIGM = 250
SEED = 0
NAMES = FEMALE_NAMES + MALE_NAMES
NOUNS = [("boat", "boats"), ("picture", "pictures"), ("plane", "planes"), ("rabbit", "rabbits"),
         ("painting", "paintings"), ("song", "songs"), ("table", "tables"), ("lesson", "lessons"),
         ("field", "fields"), ("car", "cars"), ("hill", "hills"), ("story", "stories"), ("plant", "plants"),
         ("rose", "roses"), ("patient", "patients"), ("friend", "friends")]
SINGULAR_DETERMINERS = ("this", "one", "every", "each")
PLURAL_DETERMINERS = ("two", "many")
ADJECTIVES = ("old", "new", "small", "big", "red", "little", "good", "strange", "fresh")
OBJECT_VERBS = ("likes", "has", "loves")
VERBS = {   # (third person singular, plural), with complements that fit the verb
    ("plays", "play"): ("chess", "football", "the piano", "cards"),
    ("likes", "like"): ("the museum", "the park", "the sea", "music"),
    ("reads", "read"): ("old books", "stories", "the menu"),
    ("cooks", "cook"): ("soup", "pasta", "dinner"),
    ("sings", "sing"): ("in a choir", "every evening"),
    ("grows", "grow"): ("flowers", "wheat", "vegetables"),
    ("works", "work"): ("at the hospital", "at the school", "on the farm"),
    ("repairs", "repair"): ("the car", "the boat", "the nets"),
    ("buys", "buy"): ("bread", "fresh fish", "flowers"),
    ("goes", "go"): ("to the park", "home", "to the market"),
}
PLURAL_SUBJECTS = ("the children", "the students", "the nurses", "the guests", "the engineers", "the patients")
RELATIONAL = {"singular": ("the friend", "the teacher", "the doctor"), "plural": ("the friends", "the children")}
PREDICATES = ("tired", "happy", "hungry", "busy", "young", "sick", "late")
TRANSITIVE_PAST = ("repaired", "bought", "fixed", "found", "cooked", "built", "changed", "finished")
INTRANSITIVE_PAST = ("went", "came", "fell", "waited")
THINGS = ("oven", "window", "door", "bicycle", "table", "engine", "stove", "fence", "piano", "boat", "car")
ANIMATE = ("the doctor", "the teacher", "the farmer", "the baker", "the pilot", "the chef")
INANIMATE = ("the oven", "the table", "the window", "the stove", "the door", "the fence")
ANIMATE_VERBS = ("helped", "likes", "waited for", "listens to")
PEOPLE = ("the patients", "the children", "the students", "the guests", "the nurses")


def sentence(*words) -> str:
    text = " ".join(w for w in words if w)
    return text[0].upper() + text[1:] + "."


def determiner_noun(rng, adjective: bool):
    singular, plural = NOUNS[rng.integers(len(NOUNS))]
    plural_det = rng.random() < 0.5
    det = pick(rng, PLURAL_DETERMINERS if plural_det else SINGULAR_DETERMINERS)
    adj = pick(rng, ADJECTIVES) if adjective else ""
    right, wrong = (plural, singular) if plural_det else (singular, plural)
    start = (pick(rng, NAMES), pick(rng, OBJECT_VERBS), det, adj)
    return sentence(*start, right), sentence(*start, wrong)


def subject_verb(rng):
    (sg, pl), complements = list(VERBS.items())[rng.integers(len(VERBS))]
    complement = pick(rng, complements)
    if rng.random() < 0.5:
        subject = pick(rng, NAMES)
        return sentence(subject, sg, complement), sentence(subject, pl, complement)
    subject = pick(rng, PLURAL_SUBJECTS)
    return sentence(subject, pl, complement), sentence(subject, sg, complement)


def attractor(rng):
    if rng.random() < 0.5:                     # a singular head, a plural noun between it and the verb
        subject, right, wrong = f"{pick(rng, RELATIONAL['singular'])} of {pick(rng, PLURAL_SUBJECTS)}", "was", "were"
    else:                                      # a plural head, a singular noun between
        subject, right, wrong = f"{pick(rng, RELATIONAL['plural'])} of {pick(rng, NAMES)}", "were", "was"
    predicate = pick(rng, PREDICATES)
    return sentence(subject, right, predicate), sentence(subject, wrong, predicate)


def transitive(rng):
    name, thing = pick(rng, NAMES), "the " + pick(rng, THINGS)
    return sentence(name, pick(rng, TRANSITIVE_PAST), thing), sentence(name, pick(rng, INTRANSITIVE_PAST), thing)


def animate_subject(rng):
    verb, people = pick(rng, ANIMATE_VERBS), pick(rng, PEOPLE)
    return sentence(pick(rng, ANIMATE), verb, people), sentence(pick(rng, INANIMATE), verb, people)


# (field, BLiMP's linguistics_term, UID, generator of one (good, bad) pair)
PARADIGMS = (
    ("morphology", "determiner_noun_agreement", "determiner_noun_agreement",
     lambda rng: determiner_noun(rng, adjective=False)),
    ("morphology", "determiner_noun_agreement", "determiner_noun_agreement_with_adjective",
     lambda rng: determiner_noun(rng, adjective=True)),
    ("morphology", "subject_verb_agreement", "regular_plural_subject_verb_agreement", subject_verb),
    ("morphology", "subject_verb_agreement", "distractor_agreement_relational_noun", attractor),
    ("syntax", "argument_structure", "transitive", transitive),
    ("syntax", "s-selection", "animate_subject", animate_subject),
)


def pick(rng, options):
    return options[int(rng.integers(len(options)))]


def builtin_pairs(per_paradigm: int = PAIRS_PER_PARADIGM) -> list:
    """MinimalPair records, per_paradigm distinct pairs of each paradigm (fewer only if the
    templates cannot make that many)."""
    out = []
    for k, (field, term, uid, make) in enumerate(PARADIGMS):
        rng = np.random.default_rng([SEED, k])
        seen = {}                                        # distinct pairs, in the order made
        for _ in range(50 * per_paradigm):
            if len(seen) == per_paradigm:
                break
            seen.setdefault(make(rng), None)
        out += [MinimalPair(good, bad, field, term, uid, str(i), f"builtin:{uid}:{i + 1}")
                for i, (good, bad) in enumerate(seen)]
    return out


def read_pairs_or_builtin(path, per_paradigm=None, say=None) -> list:
    """`builtin` or a BLiMP file / directory; with per_paradigm, the first N pairs of each paradigm.
    say: where a long read's progress goes (read_pairs)."""
    pairs = builtin_pairs() if path == "builtin" else read_pairs(path, say)
    if per_paradigm is None:
        return pairs
    kept, count = [], {}
    for p in pairs:
        count[p.paradigm] = count.get(p.paradigm, 0) + 1
        if count[p.paradigm] <= per_paradigm:
            kept.append(p)
    return kept


def write_jsonl(out_dir) -> list:
    """Write the pairs as out_dir/<UID>.jsonl (BLiMP's keys) -> the files written."""
    os.makedirs(out_dir, exist_ok=True)
    files, pairs = [], builtin_pairs()
    for uid in dict.fromkeys(p.paradigm for p in pairs):
        path = os.path.join(out_dir, f"{uid}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for p in (p for p in pairs if p.paradigm == uid):
                f.write(json.dumps({"sentence_good": p.good, "sentence_bad": p.bad, "field": p.field,
                                    "linguistics_term": p.phenomenon, "UID": p.paradigm, "pairID": p.pair_id}) + "\n")
        files.append(path)
    return files


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write npbert's built-in minimal pairs as BLiMP-style JSON lines")
    parser.add_argument("--out", required=True, help="directory for <UID>.jsonl files")
    for written in write_jsonl(parser.parse_args().out):
        print(written)
