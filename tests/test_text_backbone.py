"""EA-BERT (tsrep.backbones.text): real MiniLM weights against Hugging Face's BertModel, evolving attention
on top of them, checkpoint layouts and the errors for directories that are not BERT checkpoints."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

from tsrep.backbones.text import EATextClassificationModel, EATextEncoder, bundled_minilm_dir

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Evolving attention carries the attention maps of one layer into the next.",
    "Great!",
    "I'd never trust a self-driving car to take my kid to school, not in a million years.",
]
# MiniLM-L6: 6 layers of 12 heads; a map convolution is 12 -> 12 channels, 3 x 3, with bias.
MAP_CONV_PARAMS = 6 * (12 * 12 * 3 * 3 + 12)


@pytest.fixture(scope="module")
def minilm():
    return bundled_minilm_dir()


@pytest.fixture(scope="module")
def batch(minilm):
    tokenizer = AutoTokenizer.from_pretrained(str(minilm))
    return tokenizer(SENTENCES, padding=True, return_tensors="pt")


def _run(model, batch, **kw):
    with torch.no_grad():
        return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], **kw)


def test_minilm_with_alpha_beta_zero_reproduces_transformers_bert(minilm, batch):
    reference = BertModel.from_pretrained(str(minilm), attn_implementation="eager").eval()
    encoder = EATextEncoder.from_pretrained(minilm, alpha=0.0, beta=0.0).eval()
    with torch.no_grad():
        want = reference(**batch, output_hidden_states=True)
    got = _run(encoder, batch, output_hidden_states=True)
    valid = batch["attention_mask"].bool()
    assert valid.sum(1).min() < valid.shape[1]  # the batch really is padded
    assert len(got.hidden_states) == len(want.hidden_states) == 7
    for layer, (ours, theirs) in enumerate(zip(got.hidden_states, want.hidden_states)):
        diff = (ours - theirs)[valid].abs().max().item()
        assert diff < 1e-4, f"hidden state {layer} differs by {diff}"
    assert (got.last_hidden_state - want.last_hidden_state)[valid].abs().max() < 1e-4
    assert (got.pooler_output - want.pooler_output).abs().max() < 1e-4


def test_every_pretrained_weight_is_used_and_only_map_convolutions_are_new(minilm):
    plain = EATextEncoder.from_pretrained(minilm)
    report = plain.load_report
    assert report.new == [] and report.loaded == sorted(name for name, _ in plain.named_parameters())
    assert report.ignored == ["embeddings.position_ids"]  # an index buffer, not a weight

    ea = EATextEncoder.from_pretrained(minilm, alpha=0.1, beta=0.1)
    assert ea.load_report.new == sorted(ea.map_conv_parameter_names())
    assert len(ea.load_report.new) == 12 and ea.load_report.loaded == report.loaded
    new_params = sum(p.numel() for name, p in ea.named_parameters() if name in ea.load_report.new)
    assert new_params == MAP_CONV_PARAMS
    assert sum(p.numel() for p in ea.parameters()) - sum(p.numel() for p in plain.parameters()) == MAP_CONV_PARAMS
    ea_state = ea.state_dict()
    for name, value in plain.state_dict().items():
        torch.testing.assert_close(ea_state[name], value, rtol=0, atol=0)
    # The paper's random initialisation, drawn as BERT draws its own weights: N(0, 0.02), zero bias.
    conv = ea.layers[0].attention.evolution.conv
    assert 0.015 < conv.weight.std().item() < 0.025 and conv.bias.abs().max() == 0


def test_evolving_minilm_padded_batch_matches_each_sentence_alone(minilm, batch):
    torch.manual_seed(0)
    ea = EATextEncoder.from_pretrained(minilm, alpha=0.3, beta=0.3).eval()
    plain = EATextEncoder.from_pretrained(minilm).eval()
    out = _run(ea, batch).last_hidden_state
    valid = batch["attention_mask"].bool()
    for i in range(len(SENTENCES)):
        n = int(valid[i].sum())
        alone = {key: value[i : i + 1, :n] for key, value in batch.items()}
        torch.testing.assert_close(out[i, :n], _run(ea, alone).last_hidden_state[0], atol=1e-5, rtol=1e-5)
    # The evolution is really in the forward pass: the states move away from MiniLM's.
    assert (out - _run(plain, batch).last_hidden_state)[valid].abs().max() > 1e-2


def test_map_residual_starts_at_the_second_layer(minilm, batch):
    """Eq. 1: the first attention layer has no predecessor, so alpha cannot change its output."""
    skip_only = EATextEncoder.from_pretrained(minilm, alpha=0.5, beta=0.0).eval()
    plain = EATextEncoder.from_pretrained(minilm).eval()
    assert skip_only.map_conv_parameter_names() == []
    ours = _run(skip_only, batch, output_hidden_states=True).hidden_states
    theirs = _run(plain, batch, output_hidden_states=True).hidden_states
    valid = batch["attention_mask"].bool()
    torch.testing.assert_close(ours[1][valid], theirs[1][valid], atol=1e-5, rtol=1e-5)
    assert (ours[2] - theirs[2])[valid].abs().max() > 1e-2


def test_classifier_backpropagates_into_map_convolutions_and_head(minilm, batch):
    torch.manual_seed(0)
    model = EATextClassificationModel(EATextEncoder.from_pretrained(minilm, alpha=0.1, beta=0.1), n_classes=3)
    logits = model(batch["input_ids"], batch["attention_mask"])
    assert logits.shape == (len(SENTENCES), 3)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0])).backward()
    for name in model.encoder.map_conv_parameter_names():
        grad = model.encoder.get_parameter(name).grad
        assert grad is not None and torch.isfinite(grad).all() and grad.abs().max() > 0, name
    assert model.head.weight.grad.abs().max() > 0


def _tiny_config(**kw):
    settings = {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
                "intermediate_size": 32, "max_position_embeddings": 24, "type_vocab_size": 2}
    settings.update(kw)
    return BertConfig(**settings)


@pytest.mark.parametrize("layout", ["BertModel-safetensors", "BertForSequenceClassification-bin"])
def test_tiny_bert_checkpoints_load_in_both_layouts(tmp_path, layout):
    torch.manual_seed(0)
    if layout == "BertModel-safetensors":
        reference = BertModel(_tiny_config()).eval()
        reference.save_pretrained(tmp_path)
        assert (tmp_path / "model.safetensors").is_file()
    else:  # "bert." prefix, a task head, and the older pickle format
        full = BertForSequenceClassification(_tiny_config(num_labels=3)).eval()
        full.config.save_pretrained(tmp_path)
        torch.save(full.state_dict(), tmp_path / "pytorch_model.bin")
        reference = full.bert
    encoder = EATextEncoder.from_pretrained(tmp_path).eval()
    assert encoder.load_report.new == []
    if layout != "BertModel-safetensors":
        assert {"classifier.weight", "classifier.bias"} <= set(encoder.load_report.ignored)
    ids = torch.randint(1, 50, (3, 10))
    mask = torch.ones(3, 10, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    with torch.no_grad():
        want = reference(input_ids=ids, attention_mask=mask).last_hidden_state
    got = encoder(ids, mask).last_hidden_state
    torch.testing.assert_close(got[mask.bool()], want[mask.bool()], atol=1e-5, rtol=1e-5)


def _edit_config(directory, **changes):
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def _edit_weights(directory, drop=(), add=None):
    tensors = load_file(str(directory / "model.safetensors"))
    for key in drop:
        del tensors[key]
    tensors.update(add or {})
    save_file(tensors, str(directory / "model.safetensors"))


@pytest.mark.parametrize(
    "damage, error, match",
    [
        ("no-directory", FileNotFoundError, "does not exist"),
        ("no-config", FileNotFoundError, "no config.json"),
        ("gpt2", ValueError, "model_type='gpt2'"),
        ("relative-positions", ValueError, "position_embedding_type='relative_key'"),
        ("no-weights", FileNotFoundError, "none of the weight files"),
        ("missing-weight", ValueError, r"missing weights: encoder\.layer\.1\.attention\.self\.query\.weight"),
        ("unexpected-weight", ValueError, r"unexpected encoder weights: encoder\.layer\.2\.output\.dense\.bias"),
        ("shape-mismatch", ValueError, r"shape mismatches: encoder\.layer\.0\.intermediate\.dense\.bias \(32,\) \(expected \(48,\)\)"),
    ],
)
def test_directories_that_are_not_bert_checkpoints_are_refused(tmp_path, damage, error, match):
    directory = tmp_path / "ckpt"
    BertModel(_tiny_config()).save_pretrained(directory)
    if damage == "no-directory":
        directory = tmp_path / "nowhere"
    elif damage == "no-config":
        (directory / "config.json").unlink()
    elif damage == "gpt2":
        _edit_config(directory, model_type="gpt2")
    elif damage == "relative-positions":
        _edit_config(directory, position_embedding_type="relative_key")
    elif damage == "no-weights":
        (directory / "model.safetensors").unlink()
    elif damage == "missing-weight":
        _edit_weights(directory, drop=["encoder.layer.1.attention.self.query.weight"])
    elif damage == "unexpected-weight":
        _edit_weights(directory, add={"encoder.layer.2.output.dense.bias": torch.zeros(16)})
    elif damage == "shape-mismatch":
        _edit_config(directory, intermediate_size=48)
    with pytest.raises(error, match=match):
        EATextEncoder.from_pretrained(directory)


def test_bundled_checkpoint_and_input_errors(minilm, tmp_path):
    assert (minilm / "config.json").is_file() and (minilm / "model.safetensors").is_file()
    encoder = EATextEncoder.from_pretrained(minilm)
    with pytest.raises(ValueError, match="more than the 512 learned positions"):
        encoder(torch.zeros(1, 513, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask shape"):
        encoder(torch.zeros(2, 5, dtype=torch.long), torch.ones(2, 4))
    with pytest.raises(ValueError, match="a row without any real token"):
        encoder(torch.zeros(2, 5, dtype=torch.long), torch.tensor([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="n_heads=5 must divide d_model=16"):
        EATextEncoder(vocab_size=10, d_model=16, n_heads=5)
    with pytest.raises(ValueError, match="alpha must be in"):
        EATextEncoder.from_pretrained(minilm, alpha=1.5)
    # A checkpoint saved without a pooler still loads; only the pooler is new, and the user is told.
    shutil.copytree(minilm, tmp_path / "nopool", ignore=shutil.ignore_patterns("*.bin"))
    _edit_weights(tmp_path / "nopool", drop=["pooler.dense.weight", "pooler.dense.bias"])
    with pytest.warns(UserWarning, match="no pooler weights"):
        no_pooler = EATextEncoder.from_pretrained(tmp_path / "nopool")
    assert no_pooler.load_report.new == ["pooler.bias", "pooler.weight"]
