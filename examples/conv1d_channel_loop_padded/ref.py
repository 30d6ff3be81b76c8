"""Conv1d 64 -> 32, kernel 3, zero padding 1 (output as long as the input), no bias, on 8 x 64 x 4096."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(64, 32, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 64, 4096)]


def get_init_inputs():
    return []
