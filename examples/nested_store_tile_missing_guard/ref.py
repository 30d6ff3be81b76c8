import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return 2.0 * x


B = 1000
R = 24
S = 36


def get_inputs():
    return [torch.randn(B, R, S)]


def get_init_inputs():
    return []
