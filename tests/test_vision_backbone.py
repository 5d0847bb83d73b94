"""EA-ViT, the EA attention-augmented convolution and the backbone fit loop (paper 002, Sec. 3.4, 4.4)."""

import math

import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

from tsrep.backbones import EAViT
from tsrep.nn import AttentionAugmentedConv2d, AttentionMapEvolution
from tsrep.training import evaluate, fit_classifier


def _vit(**kw):
    torch.manual_seed(0)
    args = {"image_size": 8, "patch_size": 2, "n_classes": 10, "in_channels": 1, "d_model": 16, "n_layers": 3,
            "n_heads": 4, "dropout": 0.0}
    args.update(kw)
    return EAViT(**args).double().eval()


def _eq1(s, prev, alpha, beta, conv):
    """Paper 002, Eq. 1 written out: A_in = alpha*prev + (1-alpha)*S; A = beta*ReLU(Conv(A_in)) + (1-beta)*A_in."""
    a_in = s if prev is None else alpha * prev + (1 - alpha) * s
    if beta == 0:
        return a_in
    return beta * torch.relu(F.conv2d(a_in, conv.weight, conv.bias, padding=conv.padding)) + (1 - beta) * a_in


def _raw_logits(attention, tokens):
    """Q K^T / sqrt(d_head) of a MultiHeadAttention over (B, N, dim_in) tokens -> (B, K, N, N)."""
    b, n, _ = tokens.shape
    q, k, _ = attention.qkv(tokens).view(b, n, 3, attention.n_heads, attention.head_dim).permute(2, 0, 3, 1, 4)
    return q @ k.transpose(-2, -1) / math.sqrt(attention.head_dim)


def _scaled_queries(attention, tokens):
    """Q / sqrt(d_head) of a MultiHeadAttention over (B, N, dim_in) tokens -> (B, K, N, d_head)."""
    b, n, _ = tokens.shape
    q = attention.qkv(tokens).view(b, n, 3, attention.n_heads, attention.head_dim)[:, :, 0].transpose(1, 2)
    return q / math.sqrt(attention.head_dim)


# ----------------------------------------------------------------------------------------------- EA-ViT


def test_vit_shapes_square_and_rectangular():
    vit = _vit()
    x = torch.randn(5, 1, 8, 8, dtype=torch.double)
    assert vit(x).shape == (5, 10)
    feats, maps = vit.forward_features(x, return_logits=True)
    assert feats.shape == (5, 1 + 16, 16)  # class token + a 4 x 4 grid of 2 x 2 patches
    assert len(maps) == 3 and all(m.shape == (5, 4, 17, 17) for m in maps)

    rect = _vit(image_size=(8, 12), patch_size=(2, 4), in_channels=3, n_classes=7)
    out, maps = rect.forward_features(torch.randn(2, 3, 8, 12, dtype=torch.double), return_logits=True)
    assert out.shape == (2, 1 + 4 * 3, 16) and maps[-1].shape == (2, 4, 13, 13)
    assert rect(torch.randn(2, 3, 8, 12, dtype=torch.double)).shape == (2, 7)


def test_plain_vit_builds_no_evolution_and_differs_only_by_map_convolutions():
    plain, ea = _vit(alpha=0.0, beta=0.0), _vit(alpha=0.1, beta=0.3)
    assert not plain.is_evolving and ea.is_evolving
    assert not any(isinstance(m, AttentionMapEvolution) for m in plain.modules())
    # The only Conv2d of the plain ViT is the patch embedding.
    assert [type(m) for m in plain.modules() if isinstance(m, nn.Conv2d)] == [nn.Conv2d]
    n_plain = sum(p.numel() for p in plain.parameters())
    n_ea = sum(p.numel() for p in ea.parameters())
    heads, k, n_layers = 4, 3, 3
    assert n_ea - n_plain == n_layers * (heads * heads * k * k + heads)
    # A residual link without convolution (beta = 0) evolves the maps but adds no parameter.
    skip_only = _vit(alpha=0.5, beta=0.0)
    assert skip_only.is_evolving and sum(p.numel() for p in skip_only.parameters()) == n_plain


def test_plain_vit_matches_torch_pre_ln_transformer():
    """alpha = beta = 0 is the ViT encoder: the same weights in torch's own pre-LN layers give the same output."""
    vit = _vit(alpha=0.0, beta=0.0)
    x = torch.randn(4, 1, 8, 8, dtype=torch.double)
    tokens = torch.cat([vit.cls_token.expand(4, -1, -1), vit.patch_embedding(x)], 1) + vit.pos_embedding
    for layer in vit.layers:
        ref = nn.TransformerEncoderLayer(
            16, 4, 64, dropout=0.0, activation="gelu", layer_norm_eps=1e-6, batch_first=True, norm_first=True
        ).double()
        ref.self_attn.in_proj_weight.data.copy_(layer.attention.qkv.weight)
        ref.self_attn.in_proj_bias.data.copy_(layer.attention.qkv.bias)
        ref.self_attn.out_proj.load_state_dict(layer.attention.out.state_dict())
        ref.norm1.load_state_dict(layer.norm1.state_dict())
        ref.norm2.load_state_dict(layer.norm2.state_dict())
        ref.linear1.load_state_dict(layer.mlp[0].state_dict())
        ref.linear2.load_state_dict(layer.mlp[3].state_dict())
        tokens = ref.eval()(tokens)
    expected = vit.head(vit.norm(tokens)[:, 0])
    torch.testing.assert_close(vit(x), expected, atol=1e-10, rtol=1e-8)


def test_ea_vit_carries_the_logits_chain_through_every_layer():
    """Each layer's maps are Eq. 1 of its own Q K^T and the previous layer's evolved maps."""
    alpha, beta = 0.4, 0.7
    vit = _vit(alpha=alpha, beta=beta)
    inputs = []
    hooks = [layer.attention.register_forward_pre_hook(lambda m, args: inputs.append(args[0])) for layer in vit.layers]
    _, maps = vit.forward_features(torch.randn(3, 1, 8, 8, dtype=torch.double), return_logits=True)
    for h in hooks:
        h.remove()
    prev = None
    for layer, tokens, got in zip(vit.layers, inputs, maps):
        s = _raw_logits(layer.attention, tokens)
        expected = _eq1(s, prev, alpha, beta, layer.attention.evolution.conv)
        torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-8)
        prev = expected
    # The chain matters: later maps are not their layer's plain logits.
    assert (maps[-1] - _raw_logits(vit.layers[-1].attention, inputs[-1])).abs().max() > 1e-3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"image_size": 8, "patch_size": 3}, r"image_size=8 must be divisible by patch_size=3"),
        ({"image_size": (8, 10), "patch_size": 4}, r"image_size=\(8, 10\) must be divisible by patch_size=4"),
        ({"image_size": 0}, "image_size"),
        ({"patch_size": 2.0}, "patch_size"),
        ({"d_model": 18}, "n_heads=4 must be a positive integer dividing d_model=18"),
        ({"n_classes": 0}, "n_classes"),
        ({"alpha": 1.5}, "alpha"),
        ({"dropout": 1.0}, "dropout"),
    ],
)
def test_vit_bad_construction_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _vit(**kwargs)


@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (2, 1, 8, 9), (1, 8, 8), (2, 1, 16, 16)])
def test_vit_bad_input_shape(shape):
    with pytest.raises(ValueError, match=r"images must have shape \(batch, 1, 8, 8\)"):
        _vit()(torch.randn(*shape, dtype=torch.double))


def _digits():
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X, dtype=torch.float32).view(-1, 1, 8, 8) / 16.0
    return train_test_split(X, torch.tensor(y), test_size=0.3, random_state=0, stratify=y)


# Measured held-out accuracy with these settings (15 epochs, 2 x 2 patches: 17 tokens, 27 k parameters):
# EA-ViT 0.939-0.956, ViT 0.926-0.954 over model seeds 0-3; chance is 0.10. Floor 0.85.
DIGITS_FLOOR = 0.85


@pytest.mark.parametrize("alpha, beta", [(0.1, 0.3), (0.0, 0.0)], ids=["EA-ViT", "ViT"])
def test_vit_learns_sklearn_digits(alpha, beta):
    X_train, X_test, y_train, y_test = _digits()
    torch.manual_seed(0)
    model = EAViT(8, 2, 10, in_channels=1, d_model=32, n_layers=2, n_heads=4, alpha=alpha, beta=beta, dropout=0.0)
    history = fit_classifier(
        model, X_train, y_train, epochs=15, batch_size=32, lr=3e-3, lr_schedule="cosine",
        generator=torch.Generator().manual_seed(0),
    )
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    assert evaluate(model, X_test, y_test) >= DIGITS_FLOOR


# --------------------------------------------------------------------------- attention-augmented convolution


def _aa(**kw):
    torch.manual_seed(0)
    args = {"in_channels": 3, "out_channels": 16, "kernel_size": 3, "n_heads": 4, "alpha": 0.5, "beta": 1.0,
            "feature_size": 4}
    args.update(kw)
    return AttentionAugmentedConv2d(**args).double().eval()


def test_aa_conv_shapes_and_channel_split():
    layer = _aa(feature_size=(6, 5))
    assert layer.attn_channels == 8 and layer.conv.out_channels == 8  # half from attention by default
    y, logits = layer(torch.randn(2, 3, 6, 5, dtype=torch.double))
    assert y.shape == (2, 16, 6, 5) and logits.shape == (2, 4, 30, 30)

    conv_only = _aa(attn_channels=0, feature_size=None)
    y, logits = conv_only(torch.randn(2, 3, 6, 5, dtype=torch.double))
    assert conv_only.attention is None and y.shape == (2, 16, 6, 5) and logits is None
    attn_only = _aa(attn_channels=16)
    assert attn_only.conv is None and attn_only(torch.randn(1, 3, 4, 4, dtype=torch.double))[0].shape == (1, 16, 4, 4)
    plain = _aa(alpha=0.0, beta=0.0)
    assert plain(torch.randn(1, 3, 4, 4, dtype=torch.double))[1] is None  # plain attention carries nothing
    assert plain(torch.randn(1, 3, 4, 4, dtype=torch.double), need_logits=True)[1].shape == (1, 4, 16, 16)


def _relative_logits_by_loops(layer, q, height, width):
    """q_i . r^H_{h_j - h_i} + q_i . r^W_{w_j - w_i} for scaled queries q (B, K, H*W, d), pixel by pixel."""
    rel = layer.relative_logits
    out = torch.zeros(*q.shape[:2], height * width, height * width, dtype=q.dtype)
    for i in range(height * width):
        for j in range(height * width):
            (hi, wi), (hj, wj) = divmod(i, width), divmod(j, width)
            r = rel.height_embedding[hj - hi + height - 1] + rel.width_embedding[wj - wi + width - 1]
            out[:, :, i, j] = q[:, :, i] @ r
    return out


@pytest.mark.parametrize("alpha, beta", [(0.0, 0.0), (0.5, 1.0)])
def test_aa_conv_attention_half_is_attention_over_pixels_with_relative_logits(alpha, beta):
    """The attention channels are softmax((Q K^T + S^H_rel + S^W_rel) / sqrt(d)) V W^O over the H*W pixels
    (Bello et al.), evolved by Eq. 1 of the evolving-attention paper when alpha or beta > 0."""
    layer = _aa(alpha=alpha, beta=beta, feature_size=(5, 4))
    x = torch.randn(2, 3, 5, 4, dtype=torch.double)
    y, _ = layer(x)
    mha = layer.attention
    tokens = x.flatten(2).transpose(1, 2)  # (B, 20, 3), pixels in row-major order
    b, n, _ = tokens.shape
    q, k, v = mha.qkv(tokens).view(b, n, 3, 4, 2).permute(2, 0, 3, 1, 4)
    logits = (q @ k.transpose(-2, -1) + _relative_logits_by_loops(layer, q, 5, 4)) / math.sqrt(2)
    if beta > 0:  # the map convolution of one image row pair at a time (see the row-boundary test)
        logits = layer.attention.evolution._from_grid(
            _eq1(layer.attention.evolution._to_grid(logits), None, alpha, beta, mha.evolution.conv), b
        )
    h = torch.softmax(logits, -1) @ v
    expected = mha.out(h.transpose(1, 2).reshape(b, n, 8)).transpose(1, 2).reshape(2, 8, 5, 4)
    torch.testing.assert_close(y[:, 8:], expected, atol=1e-10, rtol=1e-8)
    torch.testing.assert_close(y[:, :8], layer.conv(x))


def test_aa_conv_logits_follow_relative_positions():
    """Shifting an image by one pixel shifts its logits with it (S depends on contents and offsets only),
    and a constant image's logits depend on the offset between query and key, not on where they are."""
    layer = _aa(alpha=0.0, beta=0.0, attn_channels=16, feature_size=(5, 6))
    x = torch.randn(1, 3, 5, 6, dtype=torch.double)
    logits = layer(x, need_logits=True)[1].view(4, 5, 6, 5, 6)  # (K, h_q, w_q, h_k, w_k)
    right = torch.zeros_like(x)
    right[..., 1:] = x[..., :-1]
    shifted = layer(right, need_logits=True)[1].view(4, 5, 6, 5, 6)
    torch.testing.assert_close(shifted[:, :, 1:, :, 1:], logits[:, :, :-1, :, :-1])
    down = torch.zeros_like(x)
    down[..., 1:, :] = x[..., :-1, :]
    shifted = layer(down, need_logits=True)[1].view(4, 5, 6, 5, 6)
    torch.testing.assert_close(shifted[:, 1:, :, 1:], logits[:, :-1, :, :-1])

    flat = layer(torch.ones(1, 3, 5, 6, dtype=torch.double), need_logits=True)[1].view(4, 5, 6, 5, 6)
    torch.testing.assert_close(flat[:, 1:, :, 1:], flat[:, :-1, :, :-1])  # the same offsets one row down
    torch.testing.assert_close(flat[:, :, 1:, :, 1:], flat[:, :, :-1, :, :-1])  # ... one column right
    # One query, keys at different offsets: different logits in every head (equal without positions).
    assert flat[:, 2, 3].flatten(1).std(1).min() > 1e-2


def test_aa_conv_attention_sees_far_pixels_and_conv_does_not():
    layer = _aa(feature_size=(7, 7))
    x = torch.randn(1, 3, 7, 7, dtype=torch.double)
    moved = x.clone()
    moved[:, :, 0, 0] += 3.0  # a corner pixel, outside the 3 x 3 window of the opposite corner
    y, _ = layer(x)
    y_moved, _ = layer(moved)
    far = (y_moved - y)[0, :, 6, 6]
    assert far[:8].abs().max() == 0  # convolution half: the window of (6, 6) does not reach (0, 0)
    assert far[8:].abs().max() > 1e-3  # attention half: every pixel attends to every pixel


def test_aa_conv_map_convolution_never_mixes_across_a_row_boundary():
    """In raster order pixel (h, W-1) is followed by (h+1, 0): a 3 x 3 map convolution over the flattened
    map would mix them. A change of the carried map at a row start reaches only the cells whose query
    and key lie in the same image rows as the changed cell's, at most one column away."""
    layer = _aa(alpha=0.5, beta=1.0, attn_channels=16, feature_size=(3, 4))
    x = torch.randn(1, 3, 3, 4, dtype=torch.double)
    prev = torch.randn(1, 4, 12, 12, dtype=torch.double)
    base = layer(x, prev)[1].view(4, 3, 4, 3, 4)
    for query, key in [((1, 0), (2, 0)), ((2, 3), (0, 3)), ((1, 3), (1, 0))]:
        bumped = prev.clone().view(1, 4, 3, 4, 3, 4)
        bumped[0, :, query[0], query[1], key[0], key[1]] += 100.0
        changed = (layer(x, bumped.view(1, 4, 12, 12))[1].view(4, 3, 4, 3, 4) != base).any(0).nonzero().tolist()
        assert changed  # the bump reaches its neighbours ...
        for hq, wq, hk, wk in changed:  # ... within its own image rows only
            assert (hq, hk) == (query[0], key[0]) and abs(wq - query[1]) <= 1 and abs(wk - key[1]) <= 1


def test_map_convolution_on_a_grid_is_the_flat_convolution_without_wrapping_taps():
    """The grid convolution equals the k x k convolution of the flattened (H*W x H*W) map with every tap
    that reads a pixel of another image row (a wrap-around) removed."""
    torch.manual_seed(0)
    height, width, k = 3, 4, 3
    evolution = AttentionMapEvolution(2, 0.0, 1.0, k, grid=(height, width)).double()
    a = torch.randn(2, 2, height * width, height * width, dtype=torch.double)
    conv = evolution.conv
    n, r = height * width, k // 2
    padded = F.pad(a, (r,) * 4)
    column = torch.arange(n) % width  # image column of each query (rows of the map) and key (columns)
    inside = lambda d: (column + d >= 0) & (column + d < width)  # noqa: E731  (column + d stays in its image row)
    expected = conv.bias[None, :, None, None].expand_as(a).clone()
    for di in range(-r, r + 1):
        for dj in range(-r, r + 1):
            keep = inside(di)[:, None] & inside(dj)[None, :]
            shifted = padded[..., r + di : r + di + n, r + dj : r + dj + n]
            tap = torch.einsum("oc,bcmn->bomn", conv.weight[:, :, di + r, dj + r], shifted)
            expected = expected + tap * keep
    torch.testing.assert_close(evolution(a), torch.relu(expected))
    flat = AttentionMapEvolution(2, 0.0, 1.0, k).double()
    flat.load_state_dict(evolution.state_dict())
    assert not torch.allclose(flat(a), evolution(a))  # the flat convolution does wrap


def test_aa_conv_stack_evolves_the_maps():
    first, second = _aa(), _aa(in_channels=16)
    x = torch.randn(2, 3, 4, 4, dtype=torch.double)
    h, logits1 = first(x)
    y, logits2 = second(h, logits1)
    evolution = second.attention.evolution
    tokens = h.flatten(2).transpose(1, 2)
    s2 = _raw_logits(second.attention, tokens) + second.relative_logits(_scaled_queries(second.attention, tokens))
    on_grid = _eq1(evolution._to_grid(s2), evolution._to_grid(logits1), 0.5, 1.0, evolution.conv)
    expected = evolution._from_grid(on_grid, 2)
    torch.testing.assert_close(logits2, expected, atol=1e-10, rtol=1e-8)
    # The second layer's output depends on the carried maps, not only on its input.
    y_alone, _ = second(h, None)
    assert (y - y_alone)[:, 8:].abs().max() > 1e-3
    torch.testing.assert_close(y[:, :8], y_alone[:, :8])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kernel_size": 2}, "kernel_size must be a positive odd integer"),
        ({"attn_channels": 17}, r"attn_channels must be an integer in \[0, out_channels=16\]"),
        ({"attn_channels": 6}, "n_heads=4 must be >= 1 and divide the attention width 6"),
        ({"in_channels": 0}, "in_channels"),
        ({"feature_size": (4, 0)}, "feature_size"),
        ({"feature_size": None}, "feature_size .* is required when the layer has attention"),
    ],
)
def test_aa_conv_bad_construction_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _aa(**kwargs)


def test_aa_conv_bad_forward_inputs():
    layer = _aa(feature_size=4)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, 3, height, width\)"):
        layer(torch.randn(1, 2, 4, 4, dtype=torch.double))
    with pytest.raises(ValueError, match="feature_size"):
        layer(torch.randn(1, 3, 5, 4, dtype=torch.double))
    with pytest.raises(ValueError, match=r"prev_logits must have shape \(1, 4, 16, 16\)"):
        layer(torch.randn(1, 3, 4, 4, dtype=torch.double), torch.zeros(1, 4, 9, 9, dtype=torch.double))


# ------------------------------------------------------------------------------------------ fit loop


def test_fit_classifier_is_reproducible_from_the_generator():
    X = torch.randn(40, 1, 8, 8)
    y = torch.arange(40) % 3

    def run(seed):
        torch.manual_seed(0)
        model = EAViT(8, 4, 3, in_channels=1, d_model=8, n_layers=1, n_heads=2, dropout=0.0)
        fit_classifier(model, X, y, epochs=2, batch_size=8, generator=torch.Generator().manual_seed(seed))
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    torch.testing.assert_close(run(1), run(1), atol=0, rtol=0)
    assert (run(1) - run(2)).abs().max() > 0  # another shuffle order trains another model


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"y": torch.zeros(5, dtype=torch.long)}, "one label per row of X"),
        ({"X": torch.zeros(0, 1, 8, 8), "y": torch.zeros(0, dtype=torch.long)}, "X has no cases"),
        ({"X": torch.full((4, 1, 8, 8), float("nan"))}, "NaN or infinite"),
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr_schedule": "step"}, "lr_schedule"),
        ({"optimizer": "nope"}, "unknown optimizer"),
    ],
)
def test_fit_classifier_bad_arguments(kwargs, match):
    args = {"X": torch.zeros(4, 1, 8, 8), "y": torch.zeros(4, dtype=torch.long)}
    args.update(kwargs)
    model = EAViT(8, 4, 3, in_channels=1, d_model=8, n_layers=1, n_heads=2)
    with pytest.raises(ValueError, match=match):
        fit_classifier(model, args.pop("X"), args.pop("y"), **args)
