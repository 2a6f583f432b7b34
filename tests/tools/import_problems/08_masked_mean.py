import torch
import torch.nn as nn


class Model(nn.Module):
    """The mean of a row over the positions a mask keeps (divided by the row length)."""

    def forward(self, x, keep):
        return (x * keep).mean(dim=-1)


def get_inputs():
    x = torch.rand(4096, 8192)
    return [x, torch.rand(4096, 8192) > 0.5]


def get_init_inputs():
    return []
