import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows = 100
cols = 100


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
