import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, b):
        return x + b


rows = 300
cols = 500


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return []
