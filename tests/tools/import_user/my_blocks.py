"""Code of a user's own model (not KernelBench format): a block and a function."""
import torch
import torch.nn as nn


class ScaledResidual(nn.Module):
    def __init__(self, width, alpha=0.1):
        super().__init__()
        self.alpha = alpha
        self.gain = nn.Parameter(torch.ones(width))

    def forward(self, x, skip):
        return skip + self.alpha * torch.tanh(x) * self.gain


def rms_scale(x):
    return x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6)
