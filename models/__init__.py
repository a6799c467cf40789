"""Language models behind one interface (ARCHITECTURE.md, "The model interface").

`loading.load_model(name)` returns a `language_model.LanguageModel`: a `masked_lm.MaskedLM` or a
`causal_lm.CausalLM`. Studies call its methods (`scorer`, `slot_distribution`,
`next_token_logits`, `score_segments`, `token_logprobs`, `features`, `input_embeddings`) and
read its capabilities (`fills_masks`, `answers_next_token`, `default_pooling`,
`feature_pooling`, `pseudoword_anchor`); the modules beside them implement those methods
(`masked`/`causal` scorers, `segments`, `distributions`, `encoding`, `trie`, `gguf`).
"""
