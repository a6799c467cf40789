"""COPEN part scoring and features: shared-prefix runs equal whole-prompt runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgprobe.studies.copen.methods import cic_prompts, cpj_prompt, csj_prompts
from kgprobe.models.segments import (
    ALL, PromptCodec, Segment, part_score,
)
from kgprobe.reasoning.copen_items import CiCItem, CPJItem, CSJItem

CSJ = CSJItem("q1", "test", "Paris", ["Berlin", "the banana", "a motor race"], 0)
CPJ = CPJItem("s1", "test", "A person is a particular animal .", (1, 2), 1)
CIC = CiCItem("c1", "test", "Lionel Messi is a soccer player .", "Lionel Messi", "Lionel Messi",
              [["soccer player", "person", "agent"]], ["soccer player", "person", "agent"], 1)


def reference_causal(loaded, ids):
    """log P(token t | tokens < t) from one plain forward pass over the whole prompt."""
    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return np.array([np.nan] + [float(lp[t - 1, ids[t]]) for t in range(1, len(ids))])


@pytest.mark.parametrize("name", ["tiny_gpt2", "tiny_llama", "tiny_gemma3"])
def test_shared_prefix_logprobs_equal_whole_prompt_runs(name, request):
    loaded = request.getfixturevalue(name)
    codec = PromptCodec(loaded)
    prompts = csj_prompts(CSJ) + cic_prompts(CIC)
    encoded = [codec.encode(p) for p in prompts]
    groups = [[0, 1, 2], [3, 4, 5]]
    shared = loaded.token_logprobs(encoded, groups=groups)
    for enc, got in zip(encoded, shared):
        want = reference_causal(loaded, enc.ids)
        np.testing.assert_allclose(got[1:], want[1:], atol=1e-4)
        assert np.isnan(got[0])
    # the common prefix really is shared: the first token after it differs between choices
    assert encoded[0].ids[:3] == encoded[1].ids[:3]


def test_parts_select_their_tokens(tiny_gpt2):
    codec = PromptCodec(tiny_gpt2)
    enc = codec.encode(cpj_prompt(CPJ, "true"))
    lp = tiny_gpt2.token_logprobs([enc])[0]
    concept = [i for i, t in enumerate(enc.tags) if t == "concept"]
    answer = [i for i, t in enumerate(enc.tags) if t == "answer"]
    assert concept and answer and enc.tags[0] is None  # BOS is not text
    assert part_score(enc, lp, "concept") == pytest.approx(float(np.mean(lp[concept])))
    assert part_score(enc, lp, "answer") == pytest.approx(float(np.mean(lp[answer])))
    text = [i for i, t in enumerate(enc.tags) if t is not None]
    assert part_score(enc, lp, ALL) == pytest.approx(float(np.mean(lp[text])))


def test_masked_pseudo_log_likelihood_masks_one_token_per_copy(tiny_bert):
    codec = PromptCodec(tiny_bert)
    enc = codec.encode((Segment("paris", "query"), Segment(" is the capital of "), Segment("france", "candidate"),
                        Segment(" .")))
    only_query = tiny_bert.token_logprobs([enc], parts=["query"])[0]
    scored = [i for i, v in enumerate(only_query) if not np.isnan(v)]
    assert scored == [i for i, t in enumerate(enc.tags) if t == "query"]
    full = tiny_bert.token_logprobs([enc], parts=[ALL])[0]
    for pos in [i for i, t in enumerate(enc.tags) if t is not None]:
        ids = list(enc.ids)
        ids[pos] = tiny_bert.tokenizer.mask_token_id
        with torch.no_grad():
            logits = tiny_bert.model(input_ids=torch.tensor([ids])).logits[0, pos]
        want = float(torch.log_softmax(logits, -1)[enc.ids[pos]])
        assert full[pos] == pytest.approx(want, abs=1e-4)
    assert np.isnan(full[0]) and np.isnan(full[-1])  # [CLS] and [SEP] are not scored


def test_duplicate_prompts_are_scored_once_and_spans_do_not_change_scores(tiny_llama):
    prompts = csj_prompts(CSJ) + csj_prompts(CSJ)[:1]
    grouped = tiny_llama.score_segments(prompts, ["candidate", ALL], [(0, 3), (3, 4)])
    alone = tiny_llama.score_segments(prompts, ["candidate", ALL])
    for part in ("candidate", ALL):
        np.testing.assert_allclose(grouped[part], alone[part], atol=1e-4)
        assert grouped[part][3] == grouped[part][0]


@pytest.mark.parametrize("name", ["tiny_gpt2", "tiny_gemma3"])
def test_shared_prefix_features_equal_whole_prompt_features(name, request):
    loaded = request.getfixturevalue(name)
    prompts = csj_prompts(CSJ)
    shared = loaded.features(prompts, "last", [(0, 3)])
    alone = loaded.features(prompts, "last")
    np.testing.assert_allclose(shared, alone, atol=1e-4)
    assert shared.shape == (3, loaded.model.config.hidden_size)
    assert not np.allclose(shared[0], shared[1])


def test_prompts_from_data_files_render_the_papers_wording():
    """prompts/copen.toml renders the exact strings (and scored parts) of Appendix A.1."""
    from kgprobe.studies.copen.methods import cic_prompts, cpj_prompt, csj_prompts

    assert [(s.text, s.tag) for s in csj_prompts(CSJ)[0]] == [
        ("Paris", "query"), (" is conceptually similar with ", ""), ("Berlin", "candidate"), (" .", "")]
    item = CPJItem("p1", "test", "Dogs bark .", (0, 1), 1)
    assert "".join(s.text for s in cpj_prompt(item, "true")) == "Dogs bark . The statement is true ."
    assert [s.tag for s in cpj_prompt(item, "false")] == ["concept", "", "", "answer", ""]
    cic = CiCItem("c1", "test", "He was born in Ohio .", "Obama", "Obama", [["person"]],
                  ["person", "office holder"], 0)
    with_ctx, ooc = cic_prompts(cic)[1], cic_prompts(cic, context=False)[1]
    assert [s.text for s in with_ctx] == [
        "Choose the concept that best fits the context for Obama according to the context: "
        "He was born in Ohio . Obama is an ", "office holder", " ."]
    assert ooc[0].text == "Choose the concept that best fits the context for Obama according to the context: Obama is an "
