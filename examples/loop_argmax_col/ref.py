"""argmax over dim 1 of a small 4 x 64 x 33 tensor (the column layout of KernelBench #51)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.rand(4, 64, 33)]


def get_init_inputs():
    return []
