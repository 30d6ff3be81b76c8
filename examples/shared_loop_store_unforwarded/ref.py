"""y = 2x: what the slot held before the barrier, which the kernel overwrites before reading it back."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.rand(1024 * 256)]


def get_init_inputs():
    return []
