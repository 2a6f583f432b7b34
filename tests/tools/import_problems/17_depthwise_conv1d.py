import torch
import torch.nn as nn


class Model(nn.Module):
    """A depthwise 1-d convolution (one group per channel) that keeps the length: padding
    'same' with an odd kernel."""

    def __init__(self, channels=32, kernel_size=7):
        super().__init__()
        self.depthwise = nn.Conv1d(channels, channels, kernel_size, padding="same",
                                   groups=channels)

    def forward(self, x):
        return self.depthwise(x)


def get_inputs():
    return [torch.randn(8, 32, 1000)]


def get_init_inputs():
    return []
