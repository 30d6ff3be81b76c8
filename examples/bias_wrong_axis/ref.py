import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, b):
        return x + b


rows = 256
cols = 256


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return []
