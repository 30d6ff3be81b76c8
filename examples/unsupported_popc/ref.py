import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


size = 1024


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
