"""
t-SNE of learned representations
================================

:class:`tsrep.TSRepEncoder` pretrains an EA-DC-Transformer encoder without labels (masked reconstruction: spans of
each channel are hidden and the network learns to fill them in) and turns every series into one vector. Any
scikit-learn model can use those vectors; here they are drawn with t-SNE, coloured by class.
:func:`tsrep.analysis.plot_tsne` also prints the average within-class distance (AvgWCD, smaller is tighter) of the
vectors and of the 2-D embedding.

BasicMotions: 40 training and 40 test series of 6 channels (accelerometer and gyroscope) and 4 activities. Five
epochs of pretraining on TRAIN only; the test series are then embedded.
"""

import numpy as np
from aeon.datasets import load_basic_motions
from sklearn.linear_model import LogisticRegression

from tsrep import TSRepEncoder
from tsrep.analysis import plot_tsne

X_train, y_train = load_basic_motions(split="train")
X_test, y_test = load_basic_motions(split="test")
encoder = TSRepEncoder(d_model=16, n_heads=2, n_blocks=2, pretrain_epochs=5, batch_size=16, random_state=0)
Z_train = encoder.fit_transform(X_train)
Z_test = encoder.transform(X_test)
print("representations:", Z_test.shape, "| reconstruction loss per epoch:",
      np.round(encoder.loss_history_, 3))

# A linear model on the frozen representations (no fine-tuning):
probe = LogisticRegression(max_iter=2000).fit(Z_train, y_train)
print(f"linear probe test accuracy: {probe.score(Z_test, y_test):.3f}")

fig, embedding = plot_tsne(Z_test, y_test, title="BasicMotions test series, pretrained TSRepEncoder")
