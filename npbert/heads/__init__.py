"""The fine-tuning heads, one module per kind, each holding everything that is that head's own
(head.py: the record they fill in; registry.py: the list of them; docs/heads.md):

    sequence.py   BertForSequenceClassification   a label (or a number) per sequence or pair
    token.py      BertForTokenClassification      a tag per word
    span.py       BertForQuestionAnswering        an answer span in a context
    choice.py     BertForMultipleChoice           which of C endings
    params.py     a head's parameters and config.json fields, and the checks a checkpoint's pass

npbert/task_model.py runs any of them over BertModel (fine-tuning) or over a frozen encoder's
features (the feature-based approach).
"""
