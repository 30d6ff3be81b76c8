import torch
import torch.nn as nn


class Model(nn.Module):
    """Each row minus its mean (no bias, no mean side output: both pointers are null)."""

    def forward(self, x):
        return x - x.mean(dim=1, keepdim=True)


rows, cols = 8192, 768


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
