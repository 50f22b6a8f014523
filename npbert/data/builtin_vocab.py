"""The built-in vocabulary: every word the built-in corpus and its fine-tuning tasks can emit,
whole words only, so the built-in world tokenizes with no [UNK] and no ## pieces."""
from __future__ import annotations

from npbert.data import builtin_corpus as world
from npbert.data.builtin_tasks import TASK_TEXTS        # the tasks add question words
from npbert.data.instances import SPECIAL_TOKENS


def builtin_vocab() -> list:
    """Special tokens ([PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4), then every lower-cased word and
    punctuation mark the generators (corpus and tasks) can emit, sorted: no [UNK], no ## pieces."""
    w = world
    texts = [w.FEMALE_NAMES, w.MALE_NAMES, w.SURNAMES, [c for pair in w.CITIES for c in pair], w.PETS, w.PET_NAMES,
             w.HOBBIES, w.ORG_FIRST, w.ORG_SECOND, w.DAYS, w.SEASONS, w.INTRODUCTIONS, w.BACKGROUND, w.HOBBY_SENTENCES,
             w.EVENT_OPENINGS, w.ENDINGS, TASK_TEXTS, [w.AND, w.SO], [str(age) for age in range(21, 70)]]
    for p in world.PROFESSIONS:
        texts.append([p.job, p.place, p.org_kind, *p.activities, *(s for event in p.events for s in event)])
    texts.append([w for pronouns in world.PRONOUNS.values() for w in pronouns.values()])
    words = {word.lower() for group in texts for text in group for _, word in world.pieces(text) if word}
    return list(SPECIAL_TOKENS) + sorted(words)
