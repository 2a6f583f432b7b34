import torch
import torch.nn as nn


class Model(nn.Module):
    """A sort along the rows: no family states it, so it is not imported."""

    def forward(self, x):
        return torch.sort(x, dim=1).values


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
