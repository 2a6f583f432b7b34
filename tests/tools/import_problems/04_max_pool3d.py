import torch
import torch.nn as nn


class Model(nn.Module):
    """3-d max pooling, stride 2 with padding."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(8, 32, 32, 64, 64)]


def get_init_inputs():
    return []
