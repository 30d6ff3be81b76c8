import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=(1, 2, 3))


B = 1024
C = 6
H = 10
W = 12


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return []
