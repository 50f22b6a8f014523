"""npbert: BERT in NumPy, every backward pass written by hand."""
from npbert.backend import get_backend, set_backend
from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.config import PRESETS, BertConfig
from npbert.errors import CheckpointError, DataError, InputError, NpbertError
from npbert.model import (bert_backward, bert_forward, count_params, init_params, param_shapes,
                          pretraining_backward, pretraining_forward)
from npbert.tokenization import BasicTokenizer, BertTokenizer
from npbert.wordpiece_trainer import train_wordpiece_vocab

__version__ = "0.1.0"
