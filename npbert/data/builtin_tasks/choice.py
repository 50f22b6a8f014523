"""A SWAG-like multiple-choice task from the built-in corpus's world: given a story's
introduction (which names the person's profession), which of four sentences comes next?

    right       a sentence about the person's own work
    other work  the same person doing the work of another profession: fluent, and wrong only
                given the context (a baker does not fly planes)
    2 x later   the story's own event and ending sentences ("At the end of the day, ..."):
                wrong from the ending alone, like SWAG's easier distractors

So a model that reads only the endings can reach about 1/2 (chance is 1/4); above that it
must relate the ending to the context, which a pretrained model does and a small model
trained from scratch does not learn in a few hundred steps (docs/finetuning.md).
"""
from __future__ import annotations

import numpy as np

from npbert.data import builtin_corpus as world

NUM_CHOICES = 4


def choice_examples(documents, rng) -> list:
    records = []
    for doc in documents:
        values = world.slot_values(doc.person, rng)
        other = world.pick(rng, [p for p in world.PROFESSIONS if p.job != doc.person.job])
        right, wrong = (world.detokenize(world.render(world.pick(rng, p.activities), values))
                        for p in (doc.person.profession, other))
        later = [s for s, section in zip(doc.sentences, doc.sections) if section in ("event", "ending")]
        endings = [right, wrong, later[0], later[-1]] if len(later) > 1 else None
        if endings is None or len(set(endings)) < NUM_CHOICES:
            continue                                   # a story without two distinct later sentences
        order = rng.permutation(NUM_CHOICES)
        records.append(dict(context=doc.sentences[0], endings=[endings[i] for i in order],
                            label=int(np.flatnonzero(order == 0)[0])))
    return records
