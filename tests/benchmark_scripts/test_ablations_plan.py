"""benchmarks/ablations.py, without running anything: the plan covers every row of the paper's
Tables 7 and 8 and pairs runs that differ only in the ablated choice; the paired statistics."""
import math
import sys

from support.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import ablations  # noqa: E402


def units():
    chains = ablations.plan(ablations.STUDIES, [0, 1, 2])
    return {pt[0]: pt[1] for pt, _ in chains}, {u[0]: u[1] for _, fts in chains for u in fts}


def test_every_mix_and_feature_choice_is_run_with_two_seeds():
    pretrainings, finetunings = units()
    for mix in ablations.MIXES:                        # Table 8: each mix, seeds 0 and 1, its own data
        for s in (0, 1):
            name, argv = ablations.pretrain_unit("tiny", s, mix=mix)
            assert pretrainings[name] == argv and f"data/builtin-{ablations.mix_name(mix)}" in argv
    for features in ablations.FEATURES:                # Table 7, on mini (the last four need 3+ layers)
        for s in (0, 1):
            name = ablations.finetune_unit(ablations.pretrain_unit("mini", s)[0], "tagging", s, features)[0]
            assert "--features" in finetunings[name] and features in finetunings[name]


def test_nsp_on_and_off_differ_only_in_the_flag():
    pretrainings, _ = units()
    for corpus in ("builtin", "imdb"):
        for s in (0, 1, 2):
            on = pretrainings[ablations.pretrain_unit("tiny", s, corpus=corpus)[0]]
            off = pretrainings[ablations.pretrain_unit("tiny", s, nsp=False, corpus=corpus)[0]]
            assert off == on + ["--no-nsp"]


def test_paired_statistics():
    # differences 0.1, 0.3, -0.1: mean 0.1, sample sd 0.2, standard error 0.2 / sqrt(3)
    text = ablations.paired([0.6, 0.8, 0.4], [0.5, 0.5, 0.5])
    assert text == f"+0.100 ± {0.2 / math.sqrt(3):.3f} (2/3)"
    assert ablations.paired([0.5, None], [0.4, 0.3]) == "+0.100 ± nan (1/1)"   # a missing run is left out
    assert ablations.paired([], []) == "-"
    assert ablations.mean([0.5, None, 0.7]) == "0.600"
