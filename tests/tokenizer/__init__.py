"""The WordPiece tokenizer (npbert/tokenizer): against Hugging Face's, its API and options, arbitrary
Unicode, and training a vocabulary."""
