"""What a pretrained BERT knows of language, measured as researchers measure it (docs/linguistics.md):

    pairs.py, builtin_pairs.py   minimal pairs: BLiMP's JSON lines, and npbert's own small set
    pll.py                       a sentence's pseudo-log-likelihood under the masked LM
    counting.py                  the counting baselines: unigram and Kneser-Ney n-gram
    seen_corpus.py               the sentences the model was pretrained on, for the counts
    accuracy.py                  right when the good sentence scores higher (a tie is wrong), intervals
    minimal_pairs.py, report.py  `npbert minimal-pairs`: every scorer on the same pieces, the tables
"""
