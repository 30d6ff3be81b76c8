import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum()


size = 4096


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
