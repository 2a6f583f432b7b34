import torch
import torch.nn as nn


class Model(nn.Module):
    """A margin between two squared distances of one anchor, written out by hand."""

    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, near, far):
        d_near = ((anchor - near) ** 2).sum(dim=1).sqrt()
        d_far = ((anchor - far) ** 2).sum(dim=1).sqrt()
        return torch.relu(d_near - d_far + self.margin).mean()


def get_inputs():
    return [torch.randn(4096, 2048), torch.randn(4096, 2048), torch.randn(4096, 2048)]


def get_init_inputs():
    return [0.5]
