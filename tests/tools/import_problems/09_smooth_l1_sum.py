import torch
import torch.nn as nn


class Model(nn.Module):
    """A summed smooth-L1 loss with a narrow quadratic zone."""

    def forward(self, predictions, targets):
        return nn.functional.smooth_l1_loss(predictions, targets, reduction="sum", beta=0.25)


def get_inputs():
    return [torch.rand(8192, 4096), torch.rand(8192, 4096)]


def get_init_inputs():
    return []
