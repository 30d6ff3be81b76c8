import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


size = 1000000


def get_inputs():
    return [torch.rand(size), torch.rand(size)]


def get_init_inputs():
    return []
