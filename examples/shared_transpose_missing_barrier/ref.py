import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.t().contiguous()


rows = 1000
cols = 700


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
