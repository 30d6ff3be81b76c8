import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


rows = 64
cols = 64


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
