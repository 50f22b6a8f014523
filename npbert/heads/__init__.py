"""The fine-tuning heads, one module per head, each its layer pair and loss, what it reads and its
Hugging Face names (head.py: the record they fill in; registry.py: the list of them;
docs/heads.md), and the model that runs any of them:

    sequence.py       BertForSequenceClassification   a label (or, with one output, a number) per sequence
    token.py          BertForTokenClassification      a tag per token
    span.py           BertForQuestionAnswering        an answer span's start and end
    choice.py         BertForMultipleChoice           which of C sequences
    params.py         a head's parameters and config.json fields, and the checks a checkpoint's pass
    task_model.py     any head over BertModel (fine-tuning) or over a frozen encoder's features
    feature_based.py  the feature-based approach: which hidden states the head reads, combined how

What a task's examples are (encoding, decoding, metrics) is its format: npbert/tasks/formats.py.
"""
