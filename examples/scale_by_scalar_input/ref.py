import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, alpha):
        return x * alpha


size = 1000


def get_inputs():
    return [torch.rand(size), 2.5]


def get_init_inputs():
    return []
