import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.clone()


rows = 256
cols = 128


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
