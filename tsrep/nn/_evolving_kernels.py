"""The Triton kernels of tsrep.nn.fused_evolving (its docstring states the math): imported only when they run, so
that importing tsrep, its documentation or a CPU run never needs triton."""

import triton
import triton.language as tl


@triton.jit
def _steps_ok(valid_b, idx, N, HAS_MASK: tl.constexpr):
    """(L,) bool: the steps idx that exist (0 <= idx < N) and are not padding."""
    ok = (idx >= 0) & (idx < N)
    if HAS_MASK:
        ok = ok & (tl.load(valid_b + idx, mask=ok, other=0) != 0)
    return ok

@triton.jit
def _evolved_tile(q, k, q_hat, k_hat, prev_b, valid_b, w_o, bias_o, o, rows, cols, N, scale, alpha, beta,
                  K: tl.constexpr, KS: tl.constexpr, HAS_PREV: tl.constexpr, HAS_MASK: tl.constexpr,
                  PREC: tl.constexpr):
    """A_in, the convolution C, A_logit (fp32) and keep of one (BM, BN) tile of output head o.

    q (BM, BD), k (BN, BD), q_hat (BM, BW), k_hat (BN, BW); prev_b: the batch's (K, N, N) prev (alpha*W in
    w_o, the head's (K, KS, KS) weights)."""
    R: tl.constexpr = KS // 2
    row_ok = _steps_ok(valid_b, rows, N, HAS_MASK)
    col_ok = _steps_ok(valid_b, cols, N, HAS_MASK)
    keep = row_ok[:, None] & col_ok[None, :]
    s = tl.dot(q, tl.trans(k), input_precision=PREC) * scale
    # The S part of the convolution, the Qhat . Khat product of the module docstring.
    c = tl.dot(q_hat, tl.trans(k_hat), input_precision=PREC) + bias_o
    a_in = s
    if HAS_PREV:
        own = tl.load(prev_b + o * N * N + rows[:, None] * N + cols[None, :], mask=keep, other=0.0)
        a_in = s + alpha * (own.to(tl.float32) - s)  # torch.lerp(S, prev, alpha)
        for a in tl.static_range(KS):
            rr = rows + (a - R)
            rr_ok = _steps_ok(valid_b, rr, N, HAS_MASK)
            for b2 in tl.static_range(KS):
                cc = cols + (b2 - R)
                m = rr_ok[:, None] & _steps_ok(valid_b, cc, N, HAS_MASK)[None, :]
                offsets = rr[:, None] * N + cc[None, :]
                for h in tl.static_range(K):
                    x = tl.load(prev_b + h * N * N + offsets, mask=m, other=0.0).to(tl.float32)
                    c += tl.load(w_o + (h * KS + a) * KS + b2) * x
    a_in = tl.where(keep, a_in, 0.0)
    rc = tl.maximum(c, 0.0)
    z = tl.where(keep, rc + (1.0 - beta) * (a_in - rc), 0.0)  # ReLU(C).lerp(A_in, 1 - beta), as the reference
    return a_in, c, z, keep, col_ok

@triton.jit
def _program_head(K: tl.constexpr):
    """The (batch, head) of this program, bo = b * K + o (grid axis 1): bo, o, and bo and b as int64 offsets."""
    bo = tl.program_id(1)
    b = bo // K
    return bo, bo % K, bo.to(tl.int64), b.to(tl.int64)

@triton.jit
def _head_operands(PREV, VALID, W, BIAS, o, b64, N, K: tl.constexpr, KS: tl.constexpr):
    """prev_b and valid_b (the batch's (K, N, N) prev and (N,) valid steps), w_o and bias_o (output head o's
    (K, KS, KS) weights and its bias), as _evolved_tile takes them."""
    return PREV + b64 * K * N * N, VALID + b64 * N, W + o * K * KS * KS, tl.load(BIAS + o)

@triton.jit
def _load_queries(Q, QH, bo64, rows, dims, N, D, BW: tl.constexpr):
    """q (BM, BD) and q_hat (BM, BW) of head bo64 at the steps rows, zero past N and D."""
    row_in = rows < N
    q = tl.load(Q + bo64 * N * D + rows[:, None] * D + dims[None, :], mask=row_in[:, None] & (dims < D)[None, :],
                other=0.0)
    wide = tl.arange(0, BW)
    q_hat = tl.load(QH + bo64 * N * BW + rows[:, None] * BW + wide[None, :], mask=row_in[:, None], other=0.0)
    return q, q_hat

@triton.jit
def _load_keys(Kk, V, KH, bo64, b64, cols, dims, N, D, BW: tl.constexpr):
    """k, v (BN, BD) of head bo64 and k_hat (BN, BW) of batch b64 at the steps cols, zero past N and D."""
    col_in = cols < N
    kv_mask = col_in[:, None] & (dims < D)[None, :]
    k = tl.load(Kk + bo64 * N * D + cols[:, None] * D + dims[None, :], mask=kv_mask, other=0.0)
    v = tl.load(V + bo64 * N * D + cols[:, None] * D + dims[None, :], mask=kv_mask, other=0.0)
    wide = tl.arange(0, BW)
    k_hat = tl.load(KH + b64 * N * BW + cols[:, None] * BW + wide[None, :], mask=col_in[:, None], other=0.0)
    return k, v, k_hat

@triton.jit
def _forward_kernel(Q, Kk, V, QH, KH, PREV, VALID, W, BIAS, OUT, LOGITS, LSE,
                    N, D, scale, alpha, beta, p_drop, seed,
                    K: tl.constexpr, KS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
                    BW: tl.constexpr, HAS_PREV: tl.constexpr, HAS_MASK: tl.constexpr, DROPOUT: tl.constexpr,
                    PREC: tl.constexpr):
    """One program: BM query rows of one (batch, head), all key tiles, online softmax."""
    pid_m = tl.program_id(0)
    bo, o, bo64, b64 = _program_head(K)
    rows = pid_m * BM + tl.arange(0, BM)
    dims = tl.arange(0, BD)
    row_in = rows < N
    dim_in = dims < D
    q, q_hat = _load_queries(Q, QH, bo64, rows, dims, N, D, BW)
    prev_b, valid_b, w_o, bias_o = _head_operands(PREV, VALID, W, BIAS, o, b64, N, K, KS)
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, BD), tl.float32)
    for j0 in range(0, N, BN):
        cols = j0 + tl.arange(0, BN)
        col_in = cols < N
        k, v, k_hat = _load_keys(Kk, V, KH, bo64, b64, cols, dims, N, D, BW)
        a_in, c, z, keep, col_ok = _evolved_tile(q, k, q_hat, k_hat, prev_b, valid_b, w_o, bias_o, o, rows, cols,
                                                 N, scale, alpha, beta, K, KS, HAS_PREV, HAS_MASK, PREC)
        z = z.to(LOGITS.dtype.element_ty)
        tl.store(LOGITS + bo64 * N * N + rows[:, None] * N + cols[None, :], z,
                 mask=row_in[:, None] & col_in[None, :])
        # The softmax reads the logits as stored (the next layer's prev), -inf only at padded keys.
        z = tl.where(col_ok[None, :], z.to(tl.float32), float("-inf"))
        m_new = tl.maximum(m_i, tl.max(z, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no key yet: exp(-inf - -inf) would be NaN
        p = tl.exp(z - m_safe[:, None])
        correction = tl.exp(m_i - m_safe)
        l_i = l_i * correction + tl.sum(p, 1)
        if DROPOUT:
            p = tl.where(tl.rand(seed + bo, rows[:, None] * N + cols[None, :]) >= p_drop, p, 0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(V.dtype.element_ty), v, input_precision=PREC)
        m_i = m_new
    out = acc / l_i[:, None]
    if DROPOUT:
        out = out / (1.0 - p_drop)
    tl.store(OUT + bo64 * N * D + rows[:, None] * D + dims[None, :], out.to(OUT.dtype.element_ty),
             mask=row_in[:, None] & dim_in[None, :])
    tl.store(LSE + bo64 * N + rows, m_i + tl.log(l_i), mask=row_in)

@triton.jit
def _logits_backward(z, keep, col_ok, do, v, LSE, DELTA, DLOGITS, bo, bo64, rows, cols, N, seed, p_drop,
                     DROPOUT: tl.constexpr, PREC: tl.constexpr, HAS_DLOGITS: tl.constexpr):
    """The tile's share of dv (BN, BD) and G = keep * (dZ + d A_logit from the next layer) (BM, BN), from the
    evolved logits z as the forward stored them: the softmax's backward, with the dropout mask drawn again."""
    dt = do.dtype
    row_in = rows < N
    lse = tl.load(LSE + bo64 * N + rows, mask=row_in, other=0.0)
    delta = tl.load(DELTA + bo64 * N + rows, mask=row_in, other=0.0)
    z = tl.where(col_ok[None, :], z.to(dt).to(tl.float32), float("-inf"))
    p = tl.where(row_in[:, None], tl.exp(z - lse[:, None]), 0.0)
    dp = tl.dot(do, tl.trans(v), input_precision=PREC)
    if DROPOUT:
        kept = tl.rand(seed + bo, rows[:, None] * N + cols[None, :]) >= p_drop
        dv = tl.dot(tl.trans(tl.where(kept, p / (1.0 - p_drop), 0.0).to(dt)), do, input_precision=PREC)
        dp = tl.where(kept, dp / (1.0 - p_drop), 0.0)
    else:
        dv = tl.dot(tl.trans(p.to(dt)), do, input_precision=PREC)
    g = p * (dp - delta[:, None])
    if HAS_DLOGITS:
        g += tl.load(DLOGITS + bo64 * N * N + rows[:, None] * N + cols[None, :],
                     mask=row_in[:, None] & (cols < N)[None, :], other=0.0).to(tl.float32)
    return dv, tl.where(keep, g, 0.0)

@triton.jit
def _add_query_grads(DQ, DQH, ds, dc, k, k_hat, bo64, rows, dims, N, D, BW: tl.constexpr, PREC: tl.constexpr):
    """Add the tile's dq = dS k and dQhat = dC Khat to their rows (every key tile adds its share: atomics)."""
    row_in = rows < N
    tl.atomic_add(DQ + bo64 * N * D + rows[:, None] * D + dims[None, :], tl.dot(ds, k, input_precision=PREC),
                  mask=row_in[:, None] & (dims < D)[None, :])
    wide = tl.arange(0, BW)
    tl.atomic_add(DQH + bo64 * N * BW + rows[:, None] * BW + wide[None, :], tl.dot(dc, k_hat, input_precision=PREC),
                  mask=row_in[:, None])

@triton.jit
def _backward_kernel(Q, Kk, V, QH, KH, PREV, VALID, W, BIAS, DO, LSE, DELTA, DLOGITS,
                     DQ, DK, DV, DQH, DKH, DC, DPREV, DBIAS,
                     N, D, scale, alpha, beta, p_drop, seed, s_coef, prev_coef,
                     K: tl.constexpr, KS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
                     BW: tl.constexpr, HAS_PREV: tl.constexpr, HAS_MASK: tl.constexpr, DROPOUT: tl.constexpr,
                     PREC: tl.constexpr, HAS_DLOGITS: tl.constexpr):
    """One program: BN keys of one (batch, head), all query tiles (keys outer: dk, dv, dKhat in registers).

    Per tile: G = keep * (dZ + d A_logit from the next layer), dC = beta * G * [C > 0]; A_in's direct
    part (1 - beta) * G goes to dS (times 1 - alpha: s_coef includes it and the scale) and, in later
    layers, to d prev (prev_coef = alpha * (1 - beta)); dC goes to dQhat, dKhat and the dC map."""
    pid_n = tl.program_id(0)
    bo, o, bo64, b64 = _program_head(K)
    cols = pid_n * BN + tl.arange(0, BN)
    dims = tl.arange(0, BD)
    col_in = cols < N
    dim_in = dims < D
    k, v, k_hat = _load_keys(Kk, V, KH, bo64, b64, cols, dims, N, D, BW)
    prev_b, valid_b, w_o, bias_o = _head_operands(PREV, VALID, W, BIAS, o, b64, N, K, KS)
    dt = Q.dtype.element_ty
    dk = tl.zeros((BN, BD), tl.float32)
    dv = tl.zeros((BN, BD), tl.float32)
    dk_hat = tl.zeros((BN, BW), tl.float32)
    dbias = tl.zeros((BN,), tl.float32)
    for i0 in range(0, N, BM):
        rows = i0 + tl.arange(0, BM)
        row_in = rows < N
        q, q_hat = _load_queries(Q, QH, bo64, rows, dims, N, D, BW)
        do = tl.load(DO + bo64 * N * D + rows[:, None] * D + dims[None, :], mask=row_in[:, None] & dim_in[None, :],
                     other=0.0)
        a_in, c, z, keep, col_ok = _evolved_tile(q, k, q_hat, k_hat, prev_b, valid_b, w_o, bias_o, o, rows, cols,
                                                 N, scale, alpha, beta, K, KS, HAS_PREV, HAS_MASK, PREC)
        dv_tile, g = _logits_backward(z, keep, col_ok, do, v, LSE, DELTA, DLOGITS, bo, bo64, rows, cols, N, seed,
                                      p_drop, DROPOUT, PREC, HAS_DLOGITS)
        dv += dv_tile
        dc = tl.where(c > 0, beta * g, 0.0)
        ds = (g * s_coef).to(dt)
        dc_t = dc.to(dt)
        dk += tl.dot(tl.trans(ds), q, input_precision=PREC)
        dk_hat += tl.dot(tl.trans(dc_t), q_hat, input_precision=PREC)
        _add_query_grads(DQ, DQH, ds, dc_t, k, k_hat, bo64, rows, dims, N, D, BW, PREC)
        dbias += tl.sum(dc, 0)
        if HAS_PREV:
            tile = bo64 * N * N + rows[:, None] * N + cols[None, :]
            tile_in = row_in[:, None] & col_in[None, :]
            tl.store(DC + tile, dc_t, mask=tile_in)
            tl.store(DPREV + tile, (g * prev_coef).to(DPREV.dtype.element_ty), mask=tile_in)
    kv_mask = col_in[:, None] & dim_in[None, :]
    tl.store(DK + bo64 * N * D + cols[:, None] * D + dims[None, :], dk, mask=kv_mask)
    tl.store(DV + bo64 * N * D + cols[:, None] * D + dims[None, :], dv, mask=kv_mask)
    wide = tl.arange(0, BW)
    tl.store(DKH + bo64 * N * BW + cols[:, None] * BW + wide[None, :], dk_hat, mask=col_in[:, None])
    tl.store(DBIAS + bo64 * tl.num_programs(0) + pid_n, tl.sum(dbias, 0))

@triton.jit
def _prev_backward_kernel(PREV, VALID, W, DC, DPREV, DW_PART, N,
                          K: tl.constexpr, KS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          HAS_MASK: tl.constexpr):
    """One program: one (BM, BN) tile of d prev for one (batch, input head h).

    d prev_h = keep * (alpha (1 - beta) G_h + alpha * sum_{o, a, c} W[o, h, a, c] dC_o[x - a + r, y - c + r])
    (the direct part is already in DPREV; W holds alpha * W), and the tile's share of the prev part's
    weight gradient, sum (keep * prev_h) * shifted dC_o, per (o, a, c)."""
    R: tl.constexpr = KS // 2
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bh = tl.program_id(2)
    b = bh // K
    h = bh % K
    bh64 = bh.to(tl.int64)
    valid_b = VALID + b.to(tl.int64) * N
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    keep = _steps_ok(valid_b, rows, N, HAS_MASK)[:, None] & _steps_ok(valid_b, cols, N, HAS_MASK)[None, :]
    tile_in = (rows < N)[:, None] & (cols < N)[None, :]
    tile = bh64 * N * N + rows[:, None] * N + cols[None, :]
    acc = tl.load(DPREV + tile, mask=tile_in, other=0.0).to(tl.float32)
    prev = tl.load(PREV + tile, mask=keep, other=0.0).to(tl.float32)
    dc_b = DC + b.to(tl.int64) * K * N * N
    part = ((bh64 * tl.num_programs(0) + pid_m) * tl.num_programs(1) + pid_n) * K * KS * KS
    for a in tl.static_range(KS):
        rr = rows - (a - R)
        rr_ok = (rr >= 0) & (rr < N)
        for b2 in tl.static_range(KS):
            cc = cols - (b2 - R)
            m = rr_ok[:, None] & ((cc >= 0) & (cc < N))[None, :]
            offsets = rr[:, None] * N + cc[None, :]
            for o in tl.static_range(K):
                x = tl.load(dc_b + o * N * N + offsets, mask=m, other=0.0).to(tl.float32)
                acc += tl.load(W + ((o * K + h) * KS + a) * KS + b2) * x
                tl.store(DW_PART + part + (o * KS + a) * KS + b2, tl.sum(prev * x))
    tl.store(DPREV + tile, tl.where(keep, acc, 0.0).to(DPREV.dtype.element_ty), mask=tile_in)
