import torch
import torch.nn as nn


class Model(nn.Module):
    """Each row minus its mean plus a bias per column, and the row means as a side output."""

    def forward(self, x, bias):
        m = x.mean(dim=1)
        return x - m[:, None] + bias, m


rows, cols = 8192, 768


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return []
