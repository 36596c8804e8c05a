"""An independent Bradley-Terry fit: scikit-learn's logistic regression on the votes' design matrix.

One row per vote, x = e_A - e_B (the models shown on sides A and B), y = 1 when A won; a tie (or "both
unacceptable") is two rows of weight 1/2, y = 1 and y = 0. No intercept; the L2 penalty C = 1/ridge is the
same negligible ridge as rexrank.leaderboard.arena's (which makes the optimum unique and centred).

stdin: {"m": int, "a": [...], "b": [...], "score_a": [...], "ridge": float}
stdout (last line): {"strength": [...], "versions": {"scikit-learn": version}}
"""

import json
import sys

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression


def main():
    data = json.loads(sys.stdin.read())
    m, a, b, score = data["m"], np.array(data["a"]), np.array(data["b"]), np.array(data["score_a"], dtype=float)
    rows = np.arange(len(a))
    x = np.zeros((len(a), m))
    x[rows, a] += 1.0
    x[rows, b] -= 1.0
    half = score == 0.5
    design = np.vstack([x, x[half]])
    target = np.concatenate([(score >= 0.5).astype(int), np.zeros(int(half.sum()), dtype=int)])
    weight = np.concatenate([np.where(half, 0.5, 1.0), np.full(int(half.sum()), 0.5)])
    model = LogisticRegression(C=1.0 / data["ridge"], fit_intercept=False, solver="newton-cholesky", tol=1e-12,
                               max_iter=1000)
    model.fit(design, target, sample_weight=weight)
    print(json.dumps({"strength": model.coef_[0].tolist(), "versions": {"scikit-learn": sklearn.__version__}}))


if __name__ == "__main__":
    main()
