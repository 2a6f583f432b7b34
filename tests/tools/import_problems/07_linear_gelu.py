import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer with bias, then GELU and a scale: one matmul and one epilogue."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return nn.functional.gelu(self.fc(x)) * self.scale


def get_inputs():
    return [torch.rand(2048, 1024)]


def get_init_inputs():
    return [1024, 3072, 0.5]
