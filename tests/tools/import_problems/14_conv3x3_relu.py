import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution with a bias, then a ReLU: one conv with an epilogue."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.rand(8, 16, 64, 64)]


def get_init_inputs():
    return []
