"""Cost options of the EA-DC-Transformer: checkpointing, bf16 autocast, compile, map dropout, the fused
map convolution, patch/downsampling front ends, and their estimator parameters."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tsrep import EADCTransformerClassifier
from tsrep.backbones import DCTransformerEncoder, SeriesModel
from tsrep.nn import AttentionMapEvolution
from tsrep.nn.evolving import ConvReluBlend, query_key_product
from tsrep.nn.map_dropout import attend_values, keep_mask
from tsrep.nn.patching import Patching, n_tokens


def small_model(**encoder_kwargs):
    torch.manual_seed(0)
    encoder = DCTransformerEncoder(3, 40, d_model=32, n_blocks=2, n_heads=8, p=0.5, **encoder_kwargs)
    return SeriesModel(encoder, 3, "classification", "mean", 0.1)


def padded_batch():
    torch.manual_seed(1)
    x = torch.randn(4, 40, 3)
    valid = torch.ones(4, 40, dtype=torch.bool)
    valid[1, 29:] = False
    valid[3, 11:] = False
    return x * valid[..., None], valid


# ----------------------------------------------------------------------------- checkpointing
def test_checkpointed_model_matches_plain_outputs_gradients_and_batchnorm_statistics():
    """Tolerance 0: the recomputation draws the same dropout masks and the same float operations run."""
    plain = small_model()
    ckpt = copy.deepcopy(plain)
    ckpt.encoder.checkpointing = True
    x, valid = padded_batch()
    results = []
    for model in (plain, ckpt):
        torch.manual_seed(2)  # same dropout masks in both
        model.train()
        out = model(x, valid)
        out.square().sum().backward()
        results.append((out, [p.grad for p in model.parameters()], [b.clone() for b in model.buffers()]))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=0, atol=0)
    for g_ckpt, g_plain in zip(results[1][1], results[0][1]):
        torch.testing.assert_close(g_ckpt, g_plain, rtol=0, atol=0)
    # BatchNorm running statistics and batch counters advanced once, as in the plain model
    for b_ckpt, b_plain in zip(results[1][2], results[0][2]):
        torch.testing.assert_close(b_ckpt, b_plain, rtol=0, atol=0)


def saved_map_tensors(model, x, valid):
    """(count, bytes) of float (B, K, N, N) tensors autograd saves for backward during one forward."""
    b, n = x.shape[0], x.shape[1]
    found = []

    def pack(t):
        if t.dim() == 4 and t.shape[0] == b and t.shape[-2:] == (n, n) and t.is_floating_point():
            found.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x, valid).sum()
    return len(found), sum(found)


def test_checkpointing_keeps_only_the_carried_map_per_layer_and_plain_keeps_at_most_three():
    x, valid = padded_batch()
    plain, ckpt = small_model(), small_model(checkpointing=True)
    plain.train(), ckpt.train()
    n_layers = 4  # 2 blocks of 2 layers
    count, _ = saved_map_tensors(ckpt, x, valid)
    # checkpoint inputs: the logits carried into layers 2..4; the first layer has none
    assert count == n_layers - 1
    count, _ = saved_map_tensors(plain, x, valid)
    # per layer: the map conv's input and the softmax output (masks are bool; stock ops keep about four)
    assert count <= 2 * n_layers


def test_memory_estimate_bounds_the_dilated_convolutions_padding_kept_for_backward():
    # Block i pads its convolution's d_model-wide input by (kernel_size - 1) * 2**i steps and keeps the
    # padded copy for backward: with 12 blocks on 12 steps that padding is nearly all a training step
    # keeps, and the estimate that decides whether a fit may start must count it, within a small factor.
    from tsrep.estimators._memory import training_memory

    settings = dict(d_model=8, n_heads=2, n_blocks=12, kernel_size=3, p=0.5)
    encoder = DCTransformerEncoder(2, 12, **settings).train()
    kept = {}

    def pack(t):
        kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        encoder(torch.randn(4, 12, 2)).sum()
    padded = 2 * 4 * 8 * 4 * sum(12 + 2 * 2**i for i in range(12))  # two layers per block, float32
    assert padded > 0.5 * sum(kept.values())
    need = training_memory(n_tokens_max=12, batch_size=4, in_features=2, dim_feedforward=None, attention="evolving",
                           checkpointing=False, **settings)
    assert sum(kept.values()) <= need["total"] <= 4 * sum(kept.values())
    assert need["padding"] > need["maps"] + need["activations"] + need["parameters"]


# ----------------------------------------------------------------------------- fused map convolution
@pytest.mark.parametrize("conv_mask", ["full", "causal", "cross"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_fused_map_convolution_matches_stock_ops(conv_mask, channels_last):
    torch.manual_seed(0)
    evo = AttentionMapEvolution(4, alpha=0.3, beta=0.6, kernel_size=3, conv_mask=conv_mask).double()
    evo.channels_last = channels_last
    a = torch.randn(2, 4, 7, 7, dtype=torch.double, requires_grad=True)
    out = evo._convolve_and_blend(a)
    ref = torch.lerp(a, torch.relu(evo._convolve(a)), 0.6)  # Eq. 1 with stock autograd ops
    torch.testing.assert_close(out, ref)
    g = torch.randn_like(out)
    params = [a, evo.conv.weight, evo.conv.bias]
    for got, want in zip(torch.autograd.grad((out * g).sum(), params), torch.autograd.grad((ref * g).sum(), params)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("first", [False, True])
def test_evolution_from_queries_and_keys_matches_forward_on_the_logits(channels_last, first):
    """The fused path (it overwrites the maps it makes) against forward(scale * Q K^T, prev) of Eq. 1."""
    torch.manual_seed(0)
    evo = AttentionMapEvolution(4, alpha=0.4, beta=0.7).double()
    evo.channels_last = channels_last
    q, k = (torch.randn(2, 4, 6, 3, dtype=torch.double, requires_grad=True) for _ in range(2))
    prev = None if first else torch.randn(2, 4, 6, 6, dtype=torch.double, requires_grad=True)
    valid = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    got = evo.from_queries_keys(q, k, 0.5, prev, valid)
    want = evo(0.5 * q @ k.transpose(-2, -1), prev, valid)
    torch.testing.assert_close(got, want)
    g = torch.randn_like(got)
    inputs = [q, k, evo.conv.weight] + ([] if first else [prev])
    for a, b in zip(torch.autograd.grad((got * g).sum(), inputs), torch.autograd.grad((want * g).sum(), inputs)):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_attend_values_matches_softmax_dropout_product(p):
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 5, 7, dtype=torch.double, requires_grad=True)
    scores_ref = scores.detach().clone().requires_grad_()
    v = torch.randn(2, 3, 7, 4, dtype=torch.double, requires_grad=True)
    torch.manual_seed(5)
    got = attend_values(scores, v, p)
    torch.manual_seed(5)  # the same random draws give the same mask
    keep, scale = keep_mask(scores, p)
    weights = torch.softmax(scores_ref, -1) * (keep if keep is not None else 1.0) * scale
    want = weights @ v
    torch.testing.assert_close(got, want)
    g = torch.randn_like(got)
    got_grads = torch.autograd.grad((got * g).sum(), [scores, v])
    want_grads = torch.autograd.grad((want * g).sum(), [scores_ref, v])
    for a, b in zip(got_grads, want_grads):
        torch.testing.assert_close(a, b)


def test_query_key_product_matches_matmul_and_passes_gradcheck():
    """Its backward avoids products with the transposed map; the maths must stay q @ k^T's."""
    torch.manual_seed(0)
    q = torch.randn(2, 3, 5, 2, dtype=torch.double, requires_grad=True)
    k = torch.randn(2, 3, 7, 2, dtype=torch.double, requires_grad=True)
    g = torch.randn(2, 3, 5, 7, dtype=torch.double)
    ours = torch.autograd.grad((query_key_product(q, k) * g).sum(), (q, k))
    stock = torch.autograd.grad(((q @ k.transpose(-2, -1)) * g).sum(), (q, k))
    torch.testing.assert_close(query_key_product(q, k), q @ k.transpose(-2, -1))
    torch.testing.assert_close(ours, stock)
    assert torch.autograd.gradcheck(query_key_product, (q, k))


def test_fused_map_convolution_passes_gradcheck():
    torch.manual_seed(0)
    a = torch.randn(1, 2, 5, 5, dtype=torch.double, requires_grad=True)
    w = torch.randn(2, 2, 3, 3, dtype=torch.double, requires_grad=True)
    b = torch.randn(2, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, w, b: ConvReluBlend.apply(a, w, b, (1, 1), None, 0.4, True), (a, w, b))


# ----------------------------------------------------------------------------- map dropout
def test_keep_mask_drops_p_and_keeps_the_expectation():
    torch.manual_seed(0)
    w = torch.rand(64, 8, 64, 64) + 0.5
    keep, scale = keep_mask(w, 0.1)
    assert keep.shape == w.shape and keep.dtype == torch.bool
    frac = 1 - float(keep.float().mean())
    n = w.numel()
    assert abs(frac - 0.1) < 5 * math.sqrt(0.1 * 0.9 / n)  # binomial, 5 sigma
    assert scale == pytest.approx(1 / (1 - round(0.1 * 65536) / 65536))
    assert float((w * keep * scale).mean()) == pytest.approx(float(w.mean()), rel=2e-3)
    assert keep_mask(w, 0.0) == (None, 1.0)
    with pytest.raises(ValueError, match="dropout"):
        attend_values(w, w, 1.0)


# ----------------------------------------------------------------------------- bf16 autocast
def test_bf16_autocast_is_close_to_fp32():
    """bf16 has an 8-bit mantissa: outputs within 5 % of their scale, gradients with cosine similarity >= 0.99."""
    model = small_model()
    x, valid = padded_batch()
    model.eval()  # no dropout: the two passes compute the same function
    grads = []
    outs = []
    for dtype in (None, torch.bfloat16):
        model.zero_grad()
        model.encoder.autocast_dtype = dtype
        out = model(x, valid)
        assert out.dtype == torch.float32
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    scale = float(outs[0].abs().max())
    assert float((outs[1] - outs[0]).abs().max()) <= 0.05 * scale
    assert float(F.cosine_similarity(grads[0], grads[1], dim=0)) >= 0.99


def test_softmax_runs_in_fp32_under_bf16_autocast():
    torch.manual_seed(0)
    evolving = small_model().encoder.blocks[0].layers[0].attention
    seen = []
    original = torch.softmax

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        seen.append(out.dtype)
        return out

    x = torch.randn(2, 10, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.softmax = spy
        try:
            evolving(x)
        finally:
            torch.softmax = original
    assert seen == [torch.float32]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("evolving", [True, False])
def test_fp16_and_bf16_autocast_stay_finite_and_close_to_fp32_on_large_inputs(dtype, evolving):
    """Inputs of magnitude ~50 give Q K^T beyond fp16's 65504: the attention map runs in fp32 under
    fp16 autocast (bf16 has fp32's range). Train mode without dropout: batch statistics, deterministic."""
    torch.manual_seed(0)
    kw = {} if evolving else dict(alpha=0.0, beta=0.0)
    encoder = DCTransformerEncoder(3, 40, d_model=32, n_blocks=2, n_heads=8, p=0.5, dropout=0.0, **kw)
    model = SeriesModel(encoder, 3, "classification", "mean", 0.0).train()
    x, valid = padded_batch()
    x = 50 * x
    outs, grads = [], []
    for autocast_dtype in (None, dtype):
        model.zero_grad()
        model.encoder.autocast_dtype = autocast_dtype
        out = model(x, valid)
        F.cross_entropy(out, torch.tensor([0, 1, 2, 0])).backward()
        outs.append(out.detach())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.isfinite(outs[1]).all() and torch.isfinite(grads[1]).all()
    assert float((outs[1] - outs[0]).abs().max()) <= 0.05 * float(outs[0].abs().max())
    if dtype == torch.float16:  # bf16's 8-bit mantissa makes near one-hot maps of large logits noisy
        assert float(F.cosine_similarity(grads[0], grads[1], dim=0)) >= 0.99


# ----------------------------------------------------------------------------- patch front end
def test_patch_tokens_are_the_flattened_windows_and_masks_mark_any_valid_step():
    x = torch.arange(2 * 10 * 3, dtype=torch.float32).view(2, 10, 3)
    valid = torch.ones(2, 10, dtype=torch.bool)
    valid[1, 7:] = False
    patching = Patching(4, 3, "patch")
    tokens, token_valid = patching(x, valid)
    assert tokens.shape == (2, n_tokens(10, 3), 3 * 4) == (2, 4, 12)
    # token 1 of series 0: steps 3..6, channel-major
    torch.testing.assert_close(tokens[0, 1], x[0, 3:7].T.reshape(-1))
    # token 3 starts at step 9 and reaches past the end: zeros there
    torch.testing.assert_close(tokens[0, 3].view(3, 4)[:, 1:], torch.zeros(3, 3))
    # series 1 has 7 valid steps: tokens starting at 0, 3, 6 hold a valid step, the one at 9 does not
    assert token_valid[1].tolist() == [True, True, True, False]


def test_downsampling_averages_valid_steps_only():
    x = torch.ones(1, 10, 2)
    x[0, 8:] = 0.0
    valid = torch.ones(1, 10, dtype=torch.bool)
    valid[0, 8:] = False
    tokens, token_valid = Patching(3, 3, "mean")(x, valid)
    # window [6, 9) has 2 valid steps: their mean, not diluted by the padded step 8
    torch.testing.assert_close(tokens[:, :3], torch.ones(1, 3, 2))
    assert token_valid[0].tolist() == [True, True, True, False]  # window [9, 12) has no valid step
    tokens, _ = Patching(3, 3, "mean")(x[:, :8], None)  # 8 steps alone: last window averages 2 steps
    torch.testing.assert_close(tokens, torch.ones(1, 3, 2))


@pytest.mark.parametrize("front_end", [
    {"patch_len": 6, "patch_stride": 4}, {"patch_len": 5}, {"downsample": 3},
    {"patch_len": 6, "patch_stride": 4, "conv_stem": 8}, {"conv_stem": 8},
])
@pytest.mark.parametrize("pooling", ["mean", "flatten"])
def test_padded_series_give_the_same_output_as_each_series_alone(front_end, pooling):
    torch.manual_seed(0)
    encoder = DCTransformerEncoder(3, 40, d_model=32, n_blocks=2, n_heads=8, p=0.5, **front_end)
    model = SeriesModel(encoder, 3, "classification", pooling, 0.1).eval()
    x, valid = padded_batch()
    with torch.no_grad():
        batch = model(x, valid)
        for i in range(len(x)):
            length = int(valid[i].sum())
            torch.testing.assert_close(model(x[i : i + 1, :length], None)[0], batch[i], rtol=1e-5, atol=1e-5)


def test_conv_stem_tokens_are_window_means_of_its_features_and_padding_stays_zero():
    from tsrep.nn.conv_stem import ConvStem

    torch.manual_seed(0)
    encoder = DCTransformerEncoder(3, 40, d_model=32, n_blocks=1, n_heads=8, p=0.5, patch_len=6, patch_stride=4,
                                   conv_stem=8).eval()
    assert isinstance(encoder.stem, ConvStem) and encoder.input_proj.in_features == 8
    x, valid = padded_batch()
    with torch.no_grad():
        features = encoder.stem(x, valid)
        assert features.shape == (*x.shape[:2], 8) and bool((features[~valid] == 0).all())
        tokens, _ = encoder.patching(features, valid)
        window = features[0, 4:10]  # token 1 of the first (full-length) series: steps 4..9
        torch.testing.assert_close(tokens[0, 1], window.mean(0))


@pytest.mark.parametrize("conv_stem", [0, -3, 2.5, "64", True])
def test_a_bad_conv_stem_is_named(conv_stem):
    with pytest.raises(ValueError, match=r"conv_stem must be None or a positive integer"):
        DCTransformerEncoder(3, 40, d_model=32, n_heads=8, p=0.5, conv_stem=conv_stem)


def test_conv_stem_auto_is_64_channels_for_a_classifier_of_patch_tokens_and_32_cases_or_more():
    from tsrep import EADCTransformerClassifier, EADCTransformerRegressor

    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 16)
    long_series, short_series = rng.normal(size=(32, 1, 64)), rng.normal(size=(32, 1, 20))
    quick = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=1, min_steps=0, batch_size=8, random_state=0)
    clf = EADCTransformerClassifier(**quick).fit(long_series, y)
    assert clf.patch_len_ == 8 and clf.conv_stem_ == 64 and clf.module_.encoder.stem.channels == 64
    clf = EADCTransformerClassifier(**quick).fit(long_series[:31], y[:31])  # one case fewer: no stem
    assert clf.patch_len_ == 8 and clf.conv_stem_ is None and clf.module_.encoder.stem is None
    clf = EADCTransformerClassifier(**quick).fit(short_series, y)
    assert clf.patch_len_ is None and clf.conv_stem_ is None and clf.module_.encoder.stem is None
    clf = EADCTransformerClassifier(**quick, conv_stem=None).fit(long_series, y)
    assert clf.conv_stem_ is None and clf.module_.encoder.input_proj.in_features == 8  # the raw patch: 8 steps
    reg = EADCTransformerRegressor(**quick).fit(long_series, y.astype(float))
    assert reg.patch_len_ == 8 and reg.conv_stem_ is None


def test_patch_front_end_shrinks_the_attention_maps():
    encoder = DCTransformerEncoder(3, 1751, d_model=32, n_blocks=1, n_heads=8, p=0.5, patch_len=8)
    assert encoder.n_positions == 219
    maps = []
    encoder.blocks[0].layers[0].attention.register_forward_hook(lambda m, i, o: maps.append(o[1].shape))
    with torch.no_grad():
        z = encoder.eval()(torch.randn(1, 1751, 3))
    assert z.shape == (1, 219, 32) and maps[0] == (1, 8, 219, 219)


# ----------------------------------------------------------------------------- estimator options
def toy_data(n=24, t=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array([0, 1] * (n // 2))
    X = rng.normal(size=(n, 2, t)) + y[:, None, None] * np.linspace(0, 2, t)
    return X, y


SMALL = {"d_model": 16, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 2, "min_steps": 0, "batch_size": 8, "random_state": 0}


def test_checkpointed_estimator_predicts_like_the_plain_one():
    X, y = toy_data()
    plain = EADCTransformerClassifier(**SMALL).fit(X, y)
    ckpt = EADCTransformerClassifier(checkpointing=True, **SMALL).fit(X, y)
    np.testing.assert_allclose(ckpt.predict_proba(X), plain.predict_proba(X), rtol=0, atol=1e-6)


def test_estimator_with_patches_and_downsampling_fits_and_predicts_unequal_length():
    X, y = toy_data()
    cases = [X[i][:, : 30 - (i % 7)] for i in range(len(X))]  # unequal length
    for options in ({"patch_len": 4, "patch_stride": 2}, {"downsample": 3}):
        clf = EADCTransformerClassifier(**SMALL, **options).fit(cases, y)
        assert clf.predict(cases).shape == (len(cases),)
        assert clf.module_.encoder.n_positions == math.ceil(30 / (2 if "patch_len" in options else 3))


def test_compile_option_compiles_the_encoder_in_place():
    """torch.compile's first call takes minutes on this CPU; the wiring is checked without running it."""
    _X, _y = toy_data()
    clf = EADCTransformerClassifier(compile=True, **SMALL)
    clf._validate_params()
    clf.n_channels_, clf.max_len_ = 2, 30
    clf.patch_len_ = clf.patch_stride_ = clf.conv_stem_ = clf.encoder_config_ = None
    model = clf._build_model(2)
    assert model.encoder._compiled_call_impl is not None
    plain = EADCTransformerClassifier(**SMALL)
    plain.n_channels_, plain.max_len_ = 2, 30
    plain.patch_len_ = plain.patch_stride_ = plain.conv_stem_ = plain.encoder_config_ = None
    assert set(model.state_dict()) == set(plain._build_model(2).state_dict())  # pickles and checkpoints as before


@pytest.mark.parametrize("checkpointing", [False, True])
def test_compiled_model_matches_eager_outputs_gradients_and_batchnorm_statistics(checkpointing):
    """torch.compile traces the whole padded model (custom autograd Functions and the masked BatchNorm give way to
    plain ops under tracing; fullgraph=True fails on any graph break); checkpointed layers run eagerly.
    aot_eager runs dynamo and AOT autograd, where tracing fails, without a C++ compiler."""
    torch._dynamo.reset()
    eager = small_model(checkpointing=checkpointing)
    for module in eager.modules():  # compiled and eager code draw different dropout masks
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        elif isinstance(getattr(module, "dropout", None), float):
            module.dropout = 0.0  # the attention's map dropout
    compiled = copy.deepcopy(eager)
    compiled.encoder.compile(backend="aot_eager", fullgraph=not checkpointing)
    x, valid = padded_batch()
    y = torch.tensor([0, 1, 2, 1])
    out_eager, out_compiled = eager(x, valid), compiled(x, valid)
    F.cross_entropy(out_eager, y).backward()
    F.cross_entropy(out_compiled, y).backward()
    torch.testing.assert_close(out_compiled, out_eager, rtol=1e-4, atol=1e-5)
    for (name, a), b in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-3, atol=1e-5, msg=name)
    for (name, a), b in zip(eager.named_buffers(), compiled.buffers()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6, msg=name)
    torch._dynamo.reset()


def test_compile_dict_is_torch_compiles_options_and_fits_like_eager():
    """compile={...} reaches torch.compile; without dropout the compiled fit follows the eager one."""
    torch._dynamo.reset()
    X, y = toy_data()
    options = dict(SMALL, dropout=0.0)
    plain = EADCTransformerClassifier(**options).fit(X, y)
    compiled = EADCTransformerClassifier(compile={"backend": "aot_eager"}, **options).fit(X, y)
    assert compiled.module_.encoder._compiled_call_impl is not None
    np.testing.assert_allclose(compiled.predict_proba(X), plain.predict_proba(X), rtol=0, atol=1e-4)
    torch._dynamo.reset()


@pytest.mark.parametrize(
    "params,match",
    [
        ({"checkpointing": "yes"}, "checkpointing"),
        ({"compile": "no"}, "compile"),
        ({"compile": {"fullgrph": True}}, "compile.*fullgrph"),
        ({"compile": {"mode": "bogus"}}, "compile.*bogus"),
        ({"compile": {"backend": "nope"}}, "compile.*nope"),
        ({"mixed_precision": "fp16"}, "mixed_precision"),
        ({"patch_len": 0}, "patch_len"),
        ({"patch_len": 4, "patch_stride": 5}, "patch_stride"),
        ({"patch_stride": 2}, "patch_stride"),
        ({"downsample": 0}, "downsample"),
        ({"downsample": 2, "patch_len": 4}, "downsample"),
        ({"patch_len": 4, "pretrain_epochs": 1}, "pretrain_epochs"),
    ],
)
def test_estimator_rejects_bad_cost_options_naming_them(params, match):
    X, y = toy_data()
    with pytest.raises(ValueError, match=match):
        EADCTransformerClassifier(**{**SMALL, **params}).fit(X, y)


def test_cost_options_are_constructor_arguments_of_the_encoder():
    # The estimator builds its encoder with them: nothing sets them on the module afterwards.
    est = EADCTransformerClassifier(**SMALL, checkpointing=True, mixed_precision="bf16")
    est.n_channels_, est.max_len_ = 2, 30
    est.patch_len_ = est.patch_stride_ = est.conv_stem_ = est.encoder_config_ = None
    encoder = est._build_model(2).encoder
    assert encoder.checkpointing is True and encoder.autocast_dtype is torch.bfloat16
    with pytest.raises(ValueError, match="autocast_dtype must be None or a floating torch.dtype, got 'bf16'"):
        DCTransformerEncoder(3, 40, autocast_dtype="bf16")
