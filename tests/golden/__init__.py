"""`npbert golden` and `npbert conform` (npbert/golden): the model, tokenizer and training goldens, and
hostile golden directories."""
