"""A QNLI-like sentence-pair task from the built-in corpus's world: does the sentence answer the
question? ("text" a question, "text_pair" a sentence of the same story.)

Each story gives two of its sentences that state different facts, s1 and s2, and a question for
each: q1 answered by s1 and not by s2, q2 the other way round (stories.QUESTIONS, the
questions of builtin-qa). Four records:

    (q1, s1) entailment    (q1, s2) not_entailment
    (q2, s2) entailment    (q2, s1) not_entailment

so every question and every sentence appears once with each label: a model that reads only
one of the two segments scores exactly 1/2, on every split. Above that it must relate the two:
the kind of the question (job, city, age, pet, ...) to the fact its sentence states. As in
GLUE's QNLI, both sentences come from the same story, so the person's name or the story's
profession, shared by the question and both sentences, says nothing either.
"""
from __future__ import annotations


from npbert.data import builtin_corpus as world
from npbert.data.builtin_tasks.stories import QUESTIONS

LABELS = ("entailment", "not_entailment")     # GLUE QNLI's label names, in its order
# "Every morning, Anna goes to the bakery." half-answers "Where does Anna work?": not a non-answer
ALSO_ANSWERS = {"org": {"org", "place"}}
SLOTS = {fact for _, fact, _ in QUESTIONS} | {"place"}


def qnli_examples(documents, rng) -> list:
    records = []
    for doc in documents:
        values = world.slot_values(doc.person, rng)
        pairs = crossed_pairs(doc, values)
        if not pairs:       # never in today's world (the introduction and the hobby sentence always qualify)
            continue
        i, j, q1, q2 = world.pick(rng, pairs)
        q1, q2 = (world.detokenize(world.render(world.pick(rng, qs), values)) for qs in (q1, q2))
        s1, s2 = doc.sentences[i], doc.sentences[j]
        records += [dict(text=q1, text_pair=s1, label=0), dict(text=q1, text_pair=s2, label=1),
                    dict(text=q2, text_pair=s2, label=0), dict(text=q2, text_pair=s1, label=1)]
    return records


def crossed_pairs(doc, values) -> list:
    """(i, j, questions sentence i answers and j does not, questions j answers and i does not)
    for every pair of the story's sentences i < j where both lists are non-empty. A sentence
    answers a question if it is in the section that states the fact and holds its value (the
    rule of builtin-qa's answers); it does not if it holds the value (or, for the workplace, its
    kind: ALSO_ANSWERS) nowhere: "Oslo is a city in Norway." is neither an answer nor a
    non-answer to "In which city does Anna live?"."""
    held = [held_values(sentence, values) for sentence in doc.tagged]
    answered = [[(q, fact) for q, fact, section in QUESTIONS if sec == section and fact in facts]
                for facts, sec in zip(held, doc.sections)]
    pairs = []
    for i in range(len(held)):
        for j in range(i + 1, len(held)):
            only_i = [q for q, fact in answered[i] if not held[j] & ALSO_ANSWERS.get(fact, {fact})]
            only_j = [q for q, fact in answered[j] if not held[i] & ALSO_ANSWERS.get(fact, {fact})]
            if only_i and only_j:
                pairs.append((i, j, only_i, only_j))
    return pairs


def held_values(tagged_sentence, values) -> set:
    """The slots (of QUESTIONS and ALSO_ANSWERS) whose value the sentence holds as whole words."""
    words = " " + " ".join(w for w, _ in tagged_sentence) + " "
    return {slot for slot in SLOTS if " " + " ".join(w for _, w in world.pieces(values[slot])) + " " in words}
