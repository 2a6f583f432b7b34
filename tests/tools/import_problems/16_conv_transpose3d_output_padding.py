import torch
import torch.nn as nn


class Model(nn.Module):
    """A transposed 3-d convolution without a bias: stride 2, padding 1, an output padding
    that differs per dim."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(8, 6, kernel_size=(3, 4, 3), stride=2, padding=1,
                                     output_padding=(1, 0, 1), bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(2, 8, 6, 7, 5)]


def get_init_inputs():
    return []
