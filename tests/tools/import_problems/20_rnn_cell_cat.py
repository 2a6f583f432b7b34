import torch
import torch.nn as nn


class Model(nn.Module):
    """One step of a plain RNN cell: the input and the hidden state concatenated, then a
    linear layer and tanh; the new state's halves added."""

    def __init__(self, inputs, hidden):
        super().__init__()
        self.i2h = nn.Linear(inputs + hidden, hidden)

    def forward(self, x, h):
        combined = torch.cat((x, h), dim=1)
        state = torch.tanh(self.i2h(combined))
        left, right = state.split(state.shape[1] // 2, dim=1)
        return left + right


def get_inputs():
    return [torch.rand(256, 1024), torch.rand(256, 512)]


def get_init_inputs():
    return [1024, 512]
