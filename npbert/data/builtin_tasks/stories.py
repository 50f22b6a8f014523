"""Four of the built-in tasks (the table is in __init__.py), each a function of a split's stories
and its random stream -> plain records in the usual formats, labels as class ids:

  topic     sentence classification (GLUE/SST-2-like): {"text", "label"}: the profession a
            work/event sentence is about (12 classes);
  facts     sentence pair (GLUE/MNLI-like): {"text", "text_pair", "label"}: does the hypothesis
            follow from the introduction? 0 entailment, 1 neutral, 2 contradiction;
  entities  token tagging (CoNLL-like): {"words", "tags"}: BIO tags for PER, LOC, ORG;
  qa        extractive QA (SQuAD v1.1-like): {"id", "question", "context",
            "answers": [{"text", "answer_start"}]}, answer_start a character offset.

"""
from __future__ import annotations

import regex

from npbert.data import builtin_corpus as world

FACT_LABELS = ("entailment", "neutral", "contradiction")
ENTITY_TAGS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG")

# facts: hypotheses about what the introduction states (job, city) or does not state (the rest)
STATED = ("{name} is a {job}.", "{name} works as a {job}.", "{name} lives in {city}.")
UNSTATED = ("{name} has a {pet}.", "{name} likes to {hobby}.", "{name} is {age} years old.")
# qa: (question, the fact that answers it, the section of the story that states it)
QUESTIONS = (
    ("What is the job of {full}?", "job", "intro"),
    ("In which city does {name} live?", "city", "intro"),
    ("In which country is {city}?", "country", "background"),
    ("Where does {name} work?", "org", "background"),
    ("How old is {name}?", "age", "background"),
    ("What is the name of {name}'s {pet}?", "petname", "background"),
    ("Who is the friend of {name}?", "friend", "background"),
    ("What does {name} like to do?", "hobby", "hobby"),
)
TASK_TEXTS = STATED + UNSTATED + tuple(q for q, _, _ in QUESTIONS)   # for builtin_vocab


def topic_examples(documents, rng) -> list:
    """Each work or event sentence, labelled with the profession of the story it comes from."""
    jobs = [p.job for p in world.PROFESSIONS]
    return [dict(text=sentence, label=jobs.index(doc.person.job))
            for doc in documents for sentence, section in zip(doc.sentences, doc.sections)
            if section in ("work", "event")]


def facts_examples(documents, rng) -> list:
    """Premise: the introduction (names the job and the city). Hypothesis: a stated fact
    (entailment), the same with another job or city (contradiction), or an unstated fact (neutral)."""
    records = []
    for doc in documents:
        values = world.slot_values(doc.person, rng)
        label = int(rng.integers(len(FACT_LABELS)))
        template = world.pick(rng, UNSTATED if FACT_LABELS[label] == "neutral" else STATED)
        if FACT_LABELS[label] == "contradiction":
            values["job"] = world.pick(rng, [p.job for p in world.PROFESSIONS if p.job != doc.person.job])
            values["city"] = world.pick(rng, [c for c, _ in world.CITIES if c != doc.person.city])
        records.append(dict(text=doc.sentences[0], text_pair=world.detokenize(world.render(template, values)),
                            label=label))
    return records


def entity_examples(documents, rng) -> list:
    return [dict(words=[w for w, _ in sentence], tags=[t for _, t in sentence])
            for doc in documents for sentence in doc.tagged]


def qa_examples(documents, rng) -> list:
    """Context: the story up to the hobby; one question for every fact the context states."""
    records = []
    for d, doc in enumerate(documents):
        sections = doc.sections[:doc.sections.index("hobby") + 1]
        context = " ".join(doc.sentences[:len(sections)])
        values = world.slot_values(doc.person, rng)
        for question, fact, section in QUESTIONS:
            answer = values[fact]
            if section not in sections or not any(answer in s for s, sec in zip(doc.sentences, sections) if sec == section):
                continue
            start = regex.search(r"\b" + regex.escape(answer) + r"\b", context).start()
            records.append(dict(id=f"{d}-{fact}", question=world.detokenize(world.render(question, values)),
                                context=context, answers=[dict(text=answer, answer_start=start)]))
    return records
