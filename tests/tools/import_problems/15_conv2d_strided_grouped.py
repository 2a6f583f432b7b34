import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-d convolution with an asymmetric kernel, stride, padding and dilation per dim, and
    3 groups of 4 input channels."""

    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, (3, 5), stride=(2, 1), padding=(1, 2),
                              dilation=(1, 2), groups=groups)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(4, 12, 33, 40)]


def get_init_inputs():
    return [12, 18, 3]
