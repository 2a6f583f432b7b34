import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the smallest element along the middle dim, kept as a dim of 1."""

    def forward(self, x):
        return torch.argmin(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.rand(64, 777, 300)]


def get_init_inputs():
    return []
