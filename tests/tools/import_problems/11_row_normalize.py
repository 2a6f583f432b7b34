import torch
import torch.nn as nn


class Model(nn.Module):
    """Rows scaled to unit L2 norm, as F.normalize does."""

    def forward(self, x):
        return nn.functional.normalize(x, p=2.0, dim=1, eps=1e-8)


def get_inputs():
    return [torch.rand(16384, 2048)]


def get_init_inputs():
    return []
