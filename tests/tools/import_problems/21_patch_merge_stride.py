import torch
import torch.nn as nn


class Model(nn.Module):
    """Patch merging as a hierarchical vision transformer downsamples: the four interleaved
    2 x 2 neighbours of each position taken with step-2 slices, concatenated along channels,
    normalized and projected to twice the channels."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.LayerNorm(4 * channels)
        self.reduction = nn.Linear(4 * channels, 2 * channels, bias=False)

    def forward(self, x):
        x0 = x[:, 0::2, 0::2, :]
        x1 = x[:, 1::2, 0::2, :]
        x2 = x[:, 0::2, 1::2, :]
        x3 = x[:, 1::2, 1::2, :]
        merged = torch.cat([x0, x1, x2, x3], -1)
        return self.reduction(self.norm(merged))


def get_inputs():
    return [torch.rand(16, 56, 56, 96)]


def get_init_inputs():
    return [96]
