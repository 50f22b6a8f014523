"""Fine-tuning tasks: readers for the usual file formats, the built-in and real-data tasks, the
encoding of examples into model batches, and QA windows and answer decoding.

Every reader returns a list of plain records, each with a "where" ("file:line") for errors:

    sequence classification / regression   {"text", "text_pair" (or None), "label" (or None)}
    token classification                   {"words", "tags" (or None)}
    question answering (SQuAD v1.1)        {"id", "question", "context", "answers": [{"text", "answer_start"}]}
    multiple choice (SWAG)                 {"context", "endings": [...], "label" (or None)}

formats.py says what each shape of record is to the code around the model (encoding, decoding,
metrics, baseline); registry.py names the tasks (sst-2, mnli, conll, squad,
swag, builtin-*, rt-polarity, ...), each holding its head (npbert/heads/) and its format;
checkpoint_fit.py checks a fine-tuned checkpoint's config.json against a task.
"""
